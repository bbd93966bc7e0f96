"""Notification texts in the operator's language (en, es, vi; anything else falls back to en).

The subject says what happened; the body carries the event's own text (already written in the
operator's language by whoever raised it: the hand-off reason, the lead summary) and a link.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_LANGUAGE = "en"

SUBJECTS: dict[str, dict[str, str]] = {
    "en": {
        "handoff": "{business}: a customer asks for a person",
        "lead": "{business}: new lead",
        "needs_reply": "{business}: a customer is waiting for a reply",
        "delivery_failed": "{business}: a reply could not be delivered",
        "claim_rejected_spike": "{business}: {count} replies held back in {window_minutes} min",
        "model_budget_spent": "{business}: the assistant's model budget is spent",
    },
    "es": {
        "handoff": "{business}: un cliente pide hablar con una persona",
        "lead": "{business}: nuevo cliente potencial",
        "needs_reply": "{business}: un cliente espera una respuesta",
        "delivery_failed": "{business}: no se pudo entregar una respuesta",
        "claim_rejected_spike": "{business}: {count} respuestas retenidas en {window_minutes} min",
        "model_budget_spent": "{business}: se agotó el presupuesto de modelo del asistente",
    },
    "vi": {
        "handoff": "{business}: khách hàng muốn gặp nhân viên",
        "lead": "{business}: có khách hàng tiềm năng mới",
        "needs_reply": "{business}: một khách hàng đang chờ trả lời",
        "delivery_failed": "{business}: không gửi được câu trả lời",
        "claim_rejected_spike": "{business}: {count} câu trả lời bị giữ lại trong {window_minutes} phút",
        "model_budget_spent": "{business}: trợ lý đã dùng hết hạn mức mô hình",
    },
}

CONVERSATION = {"en": "Conversation", "es": "Conversación", "vi": "Cuộc hội thoại"}
FOOTER = {
    "en": "Sent by frontdesk. Reply in the console, not to this message.",
    "es": "Enviado por frontdesk. Responda en la consola, no a este mensaje.",
    "vi": "Gửi từ frontdesk. Vui lòng trả lời trong bảng điều khiển, không trả lời tin này.",
}


@dataclass(frozen=True)
class Rendered:
    language: str
    subject: str
    body: str

    def chat_text(self) -> str:
        """One message for chat routes (no subject line there)."""
        return f"{self.subject}\n\n{self.body}"


def render(
    kind: str,
    payload: Mapping[str, Any],
    text: str,
    *,
    language: str,
    business: str,
    link: str | None,
) -> Rendered:
    language = language if language in SUBJECTS else DEFAULT_LANGUAGE
    fields = {
        "business": business,
        "count": payload.get("count", ""),
        "window_minutes": payload.get("window_minutes", ""),
    }
    subject = SUBJECTS[language].get(kind, "{business}: " + kind).format(**fields)
    lines = [text]
    conversation_id = payload.get("conversation_id")
    if link or conversation_id:
        lines += ["", f"{CONVERSATION[language]}: {link or conversation_id}"]
    lines += ["", FOOTER[language]]
    return Rendered(language, subject, "\n".join(lines))
