"""A photo shown as another photo of the same item is refused; each photo as itself ships."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from frontdesk.capabilities.tools import ToolEvidence, ToolResult
from frontdesk.context.ledgers import WorkingState
from frontdesk.verification import ImageGroup, ReplyContent, verify

BASE = "https://shop.example/media/catalog/hoa-mai"
CAKES = {
    f"{BASE}/cake-1.png": "Bánh kem dâu 16 cm",
    f"{BASE}/cake-2.png": "Bánh kem socola 20 cm",
    f"{BASE}/cake-3.png": "Bánh kem trà xanh 24 cm",
}
PHOTOS = ToolResult(
    {"service_id": "banh-kem", "photos": [{"url": u, "caption": c} for u, c in CAKES.items()]},
    ToolEvidence(
        frozenset({"banh-kem"}), photos={f"cake-{n}": f"{BASE}/cake-{n}.png" for n in (1, 2, 3)}, captions=CAKES
    ),
)


def refused(before: str, url: str, caption: str | None) -> list[str]:
    state = WorkingState(now=datetime(2026, 12, 1, 3, tzinfo=UTC), timezone="Asia/Ho_Chi_Minh")
    state.record("get_service_photos", PHOTOS)
    group = ImageGroup((url,), caption or "", before)
    reply = ReplyContent(f"{before}\n{caption or ''}".strip(), (url,), (group,))
    return [f.rule for f in verify(reply, (), state).failures]


@pytest.mark.parametrize(
    ("before", "caption"),
    [
        ("Dạ đây là bánh kem dâu 16 cm ạ:", None),
        ("Dạ mẫu bánh của tiệm ạ:", "Bánh kem dâu 20 cm"),
        ("Dạ mẫu bánh của tiệm ạ:", "Bánh trà xanh"),
    ],
)
def test_the_chocolate_cake_shown_as_another_cake_is_refused(before, caption):
    assert refused(before, f"{BASE}/cake-2.png", caption) == ["photo"]


@pytest.mark.parametrize(
    ("before", "caption"),
    [
        ("Dạ đây là bánh kem socola 20 cm ạ:", None),
        ("Dạ mẫu bánh của tiệm ạ:", "Bánh kem socola 20 cm"),
        ("Dạ tiệm có bánh 16, 20 và 24 cm, đây là bánh 20 cm ạ:", None),
        ("Dạ đây là mẫu bánh kem ạ:", None),
    ],
)
def test_the_chocolate_cake_shown_as_itself_ships(before, caption):
    assert refused(before, f"{BASE}/cake-2.png", caption) == []
