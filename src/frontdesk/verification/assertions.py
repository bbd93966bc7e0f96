"""Undeclared action statements: phrases in which the reply says it *did* something.

A reply that says "I've saved your order" must be backed by a side effect that really happened,
whether or not the model filed a claim for it. These are the agent's own words about its own
actions, so they belong to the gate, not to a business pack. English, Spanish and Vietnamese;
past or present perfect only ("I'll save it once you send your phone" is not an assertion).
"""

from __future__ import annotations

import re

# Event families: saving something (a lead, an update, contact details) and handing over.
SAVED = "saved"
HANDED_OVER = "handed_over"

_PATTERNS: dict[str, list[str]] = {
    SAVED: [
        r"\b(?:i|we)(?:'ve| have)\s+(?:now\s+|just\s+|also\s+)?(?:saved|recorded|registered|logged|noted down|"
        r"updated|changed|cancell?ed|booked|placed|submitted|forwarded)\b",
        r"\b(?:has|have) been\s+(?:saved|recorded|registered|logged|updated|changed|cancell?ed|booked|placed|"
        r"submitted|forwarded)\b",
        r"\b(?:is|are) (?:now |all )?(?:saved|registered|booked|on file)\b",
        r"\b(?:he|hemos)\s+(?:guardado|registrado|anotado|actualizado|cambiado|cancelado|reservado|enviado)\b",
        r"\b(?:ha|han)\s+(?:sido|quedado)\s+(?:guardad|registrad|actualizad|cancelad|reservad)[oa]s?\b",
        r"\bqued[óo]\s+(?:guardad|registrad|actualizad)[oa]s?\b",
        # Not when the customer did it ("như bạn đã đặt": "as you set").
        r"(?<!bạn )(?<!anh )(?<!chị )(?<!khách )đã\s+(?:lưu|ghi nhận|ghi lại|cập nhật|đặt|hủy|huỷ|gửi yêu cầu)",
    ],
    HANDED_OVER: [
        r"\b(?:i|we)(?:'ve| have)\s+(?:now\s+|just\s+)?(?:asked|notified|alerted|told|contacted|passed (?:this|it|you) "
        r"(?:on|over) to|handed (?:this|it|you) (?:over|off) to|transferred (?:this|it|you) to)\s+"
        r"(?:a |an |our |the |one of our )?(?:person|human|colleague|team(?:mate)?|manager|staff|member)",
        r"\b(?:handed|passed|transferred)\s+(?:you\s+|this\s+(?:conversation|chat)\s+)?(?:over\s+)?to\s+"
        r"(?:a |our |the )(?:person|human|colleague|team|manager|staff)",
        r"\b(?:he|hemos)\s+(?:avisado|notificado|pasado|transferido)\s+(?:a|con)\s+(?:una persona|un compañero|"
        r"una compañera|nuestro equipo|el equipo|un agente|el encargado)",
        r"đã\s+(?:chuyển|báo|thông báo)\s+(?:cho\s+)?(?:nhân viên|người|đồng nghiệp|bộ phận)",
    ],
}
_COMPILED = {family: [re.compile(p, re.IGNORECASE) for p in patterns] for family, patterns in _PATTERNS.items()}

# Which events make each family true. "Saved/updated/cancelled" is true after any side effect
# (a pack's action tools each record their own event: ``campaign_pause``, ``lead_captured``...);
# "handed over" only after a hand-off.
EVENTS_FOR: dict[str, frozenset[str] | None] = {
    SAVED: None,  # any event
    HANDED_OVER: frozenset({"handoff_triggered"}),
}


def proven(family: str, happened: set[str]) -> bool:
    """Whether the events that ``happened`` make an assertion of ``family`` true."""
    needed = EVENTS_FOR[family]
    return bool(happened) if needed is None else bool(happened & needed)


def asserted_actions(text: str) -> list[tuple[str, str]]:
    """(family, the words that assert it) for every action statement in ``text``."""
    found: list[tuple[str, str]] = []
    for family, patterns in _COMPILED.items():
        for pattern in patterns:
            match = pattern.search(text)
            if match:
                found.append((family, match.group(0)))
                break
    return found
