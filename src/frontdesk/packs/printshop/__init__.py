"""The print shop: the blueprint's example business and the demo's default pack."""

from __future__ import annotations

import json

from frontdesk.packs._pack import Pack
from frontdesk.packs.printshop.catalog import DATA_DIR, PHOTOS_DIR, SEARCH_DOCUMENTS, business, catalog
from frontdesk.packs.printshop.policies import DISCOVERY_DOMAINS, POLICIES
from frontdesk.packs.printshop.tools import build_tools

PLAYBOOK = """\
# How to use the print shop's tools
- Prices, turnaround and minimum quantities come only from search_services / get_service_detail.
  A service whose price is "not set" is quoted by the team: offer to take the request instead.
- Show photos only from get_service_photos, in an image_group block, and declare images_shown.
- Hours, address and contact details come only from get_business_info.
- When the customer wants to order or get a quote and gave a name and a phone or e-mail, call
  capture_lead once (it saves the contact, opens the follow-up and notifies the team). Ask for
  what is missing instead of guessing it.
- Changes to a saved request go through update_follow_up with its follow_up_id.
- If the customer asks for a person, or the owner's hand-over rules apply, call refer_to_human,
  then tell the customer a person will reply."""


# For a small model: what its tool list and answer rules do not already say.
COMPACT_PLAYBOOK = """\
# The print shop
- A service whose price is "not set" is quoted by the team: offer to take the request.
- capture_lead needs a name and a phone or e-mail: ask for what is missing, never guess it."""


def _service_index() -> str:
    """The catalog's ids and names, so no model guesses an id (a small one otherwise calls
    get_service_detail("business_card") and gives up). Names only: prices still come from tools."""
    entries = "; ".join(f"{s.id} = {s.name}" for s in catalog().services)
    return f"- Service ids (for get_service_detail and get_service_photos): {entries}."


FALLBACK_TEXTS = {
    "en": "Thanks for your message! I want to be sure I give you the right answer, "
    "so a member of our team will get back to you shortly.",
    "es": "¡Gracias por tu mensaje! Quiero asegurarme de darte la respuesta correcta, "
    "así que una persona de nuestro equipo te responderá en breve.",
    "vi": "Cảm ơn bạn đã nhắn tin! Để trả lời bạn thật chính xác, "
    "một nhân viên của chúng tôi sẽ liên hệ lại với bạn ngay.",
}

VOICE_FAILED_TEXTS = {
    "en": "Sorry, I couldn't make out your voice message. Could you type it for me?",
    "es": "Perdona, no pude entender tu mensaje de voz. ¿Podrías escribirlo?",
    "vi": "Xin lỗi, mình chưa nghe rõ tin nhắn thoại của bạn. Bạn có thể nhắn bằng chữ giúp mình không?",
}


def _lexicons() -> dict[str, dict[str, list[str]]]:
    data: dict[str, dict[str, list[str]]] = json.loads((DATA_DIR / "lexicons.json").read_text(encoding="utf-8"))
    return data


PACK = Pack(
    name="printshop",
    business_name=business().name,
    build_tools=build_tools,
    policies=POLICIES,
    discovery_domains=DISCOVERY_DOMAINS,
    lexicons=_lexicons(),
    item_keywords={s.id: [s.name.lower(), *s.keywords] for s in catalog().services},
    default_policy=json.loads((DATA_DIR / "policy.json").read_text(encoding="utf-8")),
    playbook=f"{PLAYBOOK}\n{_service_index()}",
    compact_playbook=f"{COMPACT_PLAYBOOK}\n{_service_index()}",
    media_dir=PHOTOS_DIR,
    fallback_texts=FALLBACK_TEXTS,
    voice_failed_texts=VOICE_FAILED_TEXTS,
    search_documents=SEARCH_DOCUMENTS,
)

__all__ = ["PACK"]
