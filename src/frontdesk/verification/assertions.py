"""Undeclared action statements: phrases in which the reply says it *did* something.

A reply that says "I've saved your order" must be backed by a side effect that really happened,
whether or not the model filed a claim for it. These are the agent's own words about its own
actions, so they belong to the gate, not to a business pack. English, Spanish and Vietnamese;
past or present perfect only ("I'll save it once you send your phone" is not an assertion).
"""

from __future__ import annotations

import re

# Event families: saving something (a lead, an update, contact details), handing over, and
# committing the business to something (confirmed, booked, "we'll call you", a refund).
SAVED = "saved"
HANDED_OVER = "handed_over"
COMMITTED = "committed"
CONFIRMED = "confirmed"
CANCELLED = "cancelled"
CHANGED = "changed"
SENT = "sent"

_PATTERNS: dict[str, list[str]] = {
    SAVED: [
        r"\b(?:i|we)(?:'ve| have)\s+(?:now\s+|just\s+|also\s+)?(?:saved|recorded|registered|logged|noted down|"
        r"updated|changed|cancell?ed|booked|placed|submitted|forwarded)\b",
        r"\b(?:has|have) been\s+(?:saved|recorded|registered|logged|updated|changed|cancell?ed|booked|placed|"
        r"submitted|forwarded)\b",
        r"\b(?:is|are) (?:now |all )?(?:saved|registered|booked|on file)\b",
        # "All set": true once the request is saved, like "saved" (a booking is "confirmed").
        r"\byou(?:'re| are)\s+(?:all\s+)?set\b|\ball set\b",
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
        r"đã\s+(?:chuyển|báo|thông báo)\s+(?:(?:cuộc trò chuyện|tin nhắn|yêu cầu|việc này|vụ này)\s+)?"
        r"(?:cho\s+|tới\s+|đến\s+)?(?:nhân viên|người|đồng nghiệp|bộ phận|quản lý|anh|chị|thợ|bên)",
        r"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+)?(?:passed|handed|transferred|forwarded|sent|escalated)\s+"
        # (a request passed to the team is a saved request: "saved" judges it, not "handed over")
        r"(?:you|your (?:case|message|question|chat)|this|it)\s+(?:on\s+|over\s+)?to\s+"
        r"(?:a|an|our|the|one of our)\s+\w+",
        r"\b(?:le|te|les)\s+(?:he\s+|hemos\s+)?(?:pas[ée]|pasado|transferido|derivado)\s+(?:tu|su)\s+(?:caso|consulta|mensaje)\b|"
        r"\b(?:pas[ée]|he pasado|hemos pasado|derivé|he derivado|he trasladado)\s+(?:tu|su)\s+"
        r"(?:caso|consulta|mensaje|conversación)\s+al?\b",
    ],
    CONFIRMED: [
        r"\b(?:is|are|has been|have been|was|were)\s+(?:now\s+|all\s+)?"
        r"(?:confirmed|reserved|booked|scheduled|set aside|on hold)\b",
        r"\byou(?:'re| are)\s+(?:all\s+)?(?:booked|confirmed|on (?:the|our) list)\b",
        r"\bput (?:you|your \w+|it|them) down\b|\bpenciled? (?:you|it) in\b",
        r"\b(?:i|we)(?:'ve| have)?\s+(?:reserved|booked|scheduled|confirmed|set aside|held|locked in)\b",
        r"\b(?:queda|está|quedó|están|quedan)\s+(?:confirmad|reservad|agendad|apartad)[oa]s?\b",
        r"\b(?:te|le|os|les)\s+(?:lo |la |los |las )?(?:he |hemos )?(?:reservado|apartado|agendado|confirmado)\b",
        r"\b(?:te|le|os|les)\s+(?:lo |la |los |las )?(?:dejo|dejamos|tengo|tenemos)\s+"
        r"(?:reservad|apartad|guardad)[oa]s?\b",
        r"(?:đã|được)\s+(?:được\s+)?(?:xác nhận|giữ chỗ|đặt lịch|lên đơn|chốt đơn)|đã\s+(?:giữ|đặt cho|ghi tên)",
    ],
    CANCELLED: [
        r"\b(?:i|we)(?:'ve| have)\s+(?:now\s+|just\s+)?cancell?ed\b|\b(?:has|have) been cancell?ed\b",
        r"\b(?:is|are) (?:now )?cancell?ed\b",
        r"\b(?:he|hemos)\s+cancelado\b|\b(?:ha|han)\s+(?:sido|quedado)\s+cancelad[oa]s?\b|\bqued[óo] cancelad[oa]\b",
        r"đã\s+(?:được\s+)?(?:hủy|huỷ)",
    ],
    # Changed: "I've changed your order" needs a change made this turn, not an earlier save.
    CHANGED: [
        r"\b(?:i|we)(?:'ve| have)\s+(?:now\s+|just\s+|also\s+)?(?:updated|changed|amended|modified|adjusted)\s+"
        r"(?:your|the)\b",
        r"\b(?:he|hemos)\s+(?:actualizado|cambiado|modificado)\s+(?:tu|su|el|la|los|las)\b",
        r"(?<!bạn )(?<!anh )(?<!chị )đã\s+(?:cập nhật|đổi|sửa|chỉnh)\s+(?:lại\s+)?"
        r"(?:đơn|số lượng|yêu cầu|thông tin|thành|sang)",
    ],
    # Sent: a quote, a form or an e-mail went out; no catalog tool sends one.
    SENT: [
        r"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+)?(?:e-?mailed|sent|texted)\s+(?:you\s+)?(?:over\s+)?"
        r"(?:the|a|an|your)\s+(?:\w+\s+){0,2}(?:quote|form|invoice|estimate|proof|brochure|catalog(?:ue)?|"
        r"price list|confirmation|receipt|link|e-?mail)\b|\b(?:i|we)(?:'ve| have)\s+e-?mailed\b",
        r"\b(?:te|le|os|les)\s+(?:he|hemos)\s+(?:enviado|mandado)\s+(?:el|la|un|una)\s+(?:\w+\s+){0,2}"
        r"(?:presupuesto|formulario|factura|correo|enlace|catálogo|confirmación|recibo)\b",
        r"đã\s+gửi\s+(?:\w+\s+){0,2}(?:báo giá|email|mail|hóa đơn|form|mẫu|link|đường dẫn|xác nhận)",
    ],
    COMMITTED: [
        r"\b(?:i|we)(?:'ll| will)\s+(?:call|phone|ring|text|email|e-mail|contact|deliver|ship|send you|refund|reserve|"
        r"hold|book|confirm|have (?:it|them|your \w+) ready)\b",
        r"\b(?:someone|a (?:person|colleague|manager)|(?:a |one )?member of (?:our|the) team|the team|our team|"
        r"(?:a |one of )?our (?:staff|designers?|colleagues?))\s+(?:will|'ll|is going to)\s+"
        r"(?:call|contact|reach|get back|get in touch|phone|text|email|e-mail|follow up|be in touch)",
        r"\b(?:you'll|you will) (?:get|receive) (?:a |your )?(?:refund|call|confirmation)\b",
        r"\b(?:te|le|os|les)\s+(?:llamaremos|llamamos|llamará|escribiremos|contactaremos|contactará|avisaremos|"
        r"enviaremos|devolveremos|reembolsaremos|confirmaremos)\b",
        r"\b(?:el equipo|alguien|un compañero|una compañera|nuestro equipo)\s+(?:te|le|os|se)\s+"
        r"(?:llamará|contactará|escribirá|pondrá en contacto|responderá)",
        r"\bte (?:devolvemos|reembolsamos)\b|\b(?:hemos|he) (?:hecho|tramitado) (?:el|tu) reembolso\b",
        r"(?:sẽ|sẽ được)\s+(?:gọi|liên hệ|liên lạc|giao|gửi|hoàn tiền|giữ|nhắn|xác nhận)",
        r"\bhoàn (?:tiền|lại tiền)\b",
    ],
}
_COMPILED = {family: [re.compile(p, re.IGNORECASE) for p in patterns] for family, patterns in _PATTERNS.items()}
FAMILIES = tuple(_PATTERNS)
# A commitment on a condition is not an assertion: "we'll call you once you send your number".
# A commitment the business's own process makes, said with its trigger after it: "a deposit we
# return when you bring the bike back" ("que te devolvemos al entregar la bici").
_ON_EVENT = re.compile(
    r"\s*(?:\w+\s+){0,3}?(?:al (?:entregar|devolver|recoger|terminar)|cuando (?:devuelvas|entregues|termines)|"
    r"when you (?:return|bring|drop)|on return|upon return|once (?:you return|it's returned)|khi (?:trả|mang))",
    re.IGNORECASE,
)
_CONDITION = re.compile(
    r"\b(?:if|once|as soon as|when you|after you|si|cuando|en cuanto|una vez|nếu|khi|sau khi|ngay khi|can|could|"
    r"would you like|want me to|shall i|puedo|quieres|có muốn|muốn em)\b[^.!?\n]*$",
    re.IGNORECASE,
)

# Which events make each family true. "Saved/updated/cancelled" is true after any side effect
# (a pack's action tools each record their own event: ``campaign_pause``, ``lead_captured``...);
# "handed over" only after a hand-off.
EVENTS_FOR: dict[str, frozenset[str] | None] = {
    SAVED: None,  # any event
    HANDED_OVER: frozenset({"handoff_triggered"}),
    COMMITTED: None,  # an action this turn, or an open follow-up or hand-off someone will act on
    # "Confirmed/booked/reserved" needs an action that confirms or books: a saved request for the
    # team confirms nothing. "Cancelled" needs a cancellation.
    CONFIRMED: frozenset({"booking_confirmed", "order_confirmed", "reservation_made", "appointment_booked"}),
    CANCELLED: frozenset({"follow_up_cancelled", "booking_cancelled", "order_cancelled"}),
    CHANGED: None,  # any event, made this turn (THIS_TURN)
    SENT: frozenset({"message_sent", "email_sent", "quote_sent", "form_sent"}),
}
# Families only this turn's events prove: an earlier capture makes "saved" still true, but "I've
# changed your order" is news, and news needs this turn's change.
THIS_TURN = frozenset({CHANGED})


def proven(family: str, happened: set[str]) -> bool:
    """Whether the events that ``happened`` make an assertion of ``family`` true."""
    needed = EVENTS_FOR[family]
    return bool(happened) if needed is None else bool(happened & needed)


def asserted_actions(text: str) -> list[tuple[str, str]]:
    """(family, the words that assert it) for every action statement in ``text``."""
    found: list[tuple[str, str]] = []
    for family, patterns in _COMPILED.items():
        for pattern in patterns:
            match = next(
                (m for m in pattern.finditer(text) if not _conditional(text, m) and not _ON_EVENT.match(text, m.end())),
                None,
            )
            if match:
                found.append((family, match.group(0)))
                break
    return found


def _conditional(text: str, match: re.Match[str]) -> bool:
    """Whether the words before ``match`` in its sentence make it a condition or an offer."""
    start = max(text.rfind(mark, 0, match.start()) for mark in (".", "!", "?", "\n"))
    return bool(_CONDITION.search(text[start + 1 : match.start()]))
