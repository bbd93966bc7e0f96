"""Things named by their names: a campaign, a reward or a member named in a message names its
domain for the router, as its id would, with or without Vietnamese diacritics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frontdesk.platform.clock import ManualClock
from frontdesk.reasoning.action_router import ActionLexicon, ActionRouter
from frontdesk.reasoning.entity_names import EntityNames, NameRefresh, read_names
from frontdesk.reasoning.router import RouterState

LEXICON = Path(__file__).parents[2] / "src/frontdesk/packs/loyalty/data/lexicon.json"
NAMES = EntityNames(
    {
        "campaign": ["Summer Splash 2027", "Khuyến mãi Trung thu / Mid-Autumn deal"],
        "reward": ["Canvas tote", "Staff", "Ly sứ (Porcelain mug)"],
        "member": ["Phạm Thị Hồng Nhung", "Oliver Tran"],
    }
)


def router() -> ActionRouter:
    return ActionRouter(ActionLexicon(**json.loads(LEXICON.read_text(encoding="utf-8"))), NAMES)


def test_a_name_names_its_domain_whatever_its_case_or_diacritics() -> None:
    assert NAMES.domains_in("pause summer splash 2027 please") == {"campaign"}
    assert NAMES.domains_in("diem cua pham thi hong nhung") == {"member"}
    assert NAMES.domains_in("how many Porcelain mug are left?") == {"reward"}  # one half of a bilingual name
    assert NAMES.domains_in("gia hạn Mid-Autumn deal") == {"campaign"}


def test_a_thing_is_found_by_the_short_form_people_use_and_in_the_plural_but_a_person_only_whole() -> None:
    names = EntityNames(
        {
            "reward": ["Vé xem phim CGV 2D", "Lounge pass Tân Sơn Nhất", "Canvas tote", "Lounge chair cushion"],
            "campaign": ["Weekend Double Points"],
            "member": ["Nguyễn Văn An Khang"],
        }
    )

    assert names.domains_in("đổi vé CGV cho anh Bình") == {"reward"}
    assert names.domains_in("we're out of canvas totes") == {"reward"}
    assert names.domains_in("how is weekend double doing?") == {"campaign"}
    # one word of a name is not its short form; a person is never shortened, nor made plural
    assert names.domains_in("the lounge is closed") == frozenset()
    assert names.domains_in("nguyen van an called") == frozenset()
    assert names.domains_in("the nguyen van an khangs") == frozenset()


def test_a_word_in_capitals_is_an_acronym_only_when_it_reads_as_none() -> None:
    names = EntityNames({"reward": ["FREE Coffee Voucher", "Vé VIP"], "campaign": ["SUMMER SALE 2024"]})

    assert names.domains_in("is it free?") == frozenset()
    assert names.domains_in("any sales today?") == frozenset()
    assert names.domains_in("đổi vé VIP cho khách") == {"reward"}


def test_a_short_single_word_or_part_of_a_word_is_not_a_name() -> None:
    assert NAMES.domains_in("ask the staff") == frozenset()  # "Staff" is too ordinary a word
    assert NAMES.domains_in("Oliver Trang called") == frozenset()  # not Oliver Tran


def test_the_router_reads_a_change_to_a_thing_named_by_its_name() -> None:
    decision = router().route("put Summer Splash 2027 on hold", RouterState())

    assert (decision.intent, set(decision.domains)) == ("pause", {"campaign"})
    assert "named:campaign" in decision.signals


def test_a_question_about_a_member_by_name_is_about_members() -> None:
    decision = router().route("what has Oliver Tran redeemed this year?", RouterState())

    assert "member" in decision.domains
    assert decision.intent != "unknown"


async def test_names_are_read_page_by_page_from_the_list_tools_and_a_failing_list_is_skipped() -> None:
    members = [{"id": f"mem_{n:04d}", "name": f"Member Number {n}"} for n in range(250)]
    calls: list[tuple[str, dict[str, Any]]] = []

    async def call(tool: str, arguments: Any) -> Any:
        calls.append((tool, dict(arguments)))
        if tool == "reward_list":
            raise RuntimeError("the service is down")
        offset, limit = arguments["offset"], arguments["limit"]
        return {"items": members[offset : offset + limit], "total": len(members)}

    names = await read_names(call, {"member": "member_list", "reward": "reward_list"})

    assert names.domains_in("points of member number 249") == {"member"}
    assert [c[1]["offset"] for c in calls if c[0] == "member_list"] == [0, 100, 200]
    assert len(names) == 250


async def test_names_are_read_again_once_the_refresh_is_due() -> None:
    clock = ManualClock()
    listed = [{"name": "Summer Splash 2027"}]

    async def call(tool: str, arguments: Any) -> Any:
        return {"items": list(listed), "total": len(listed)}

    refresh = NameRefresh(clock, every_s=300)
    routing = router()
    await refresh.add(routing, call, {"campaign": "campaign_list"})
    listed.append({"name": "Winter Warmers"})

    assert await refresh() == 0  # not due yet
    assert routing.names.domains_in("pause Winter Warmers") == frozenset()
    clock.advance(300)
    assert await refresh() == 1
    assert routing.names.domains_in("pause Winter Warmers") == {"campaign"}
