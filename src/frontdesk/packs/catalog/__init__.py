"""The catalog pack: for any business that sells things from a catalog (products or services).

Its tools read the tenant's own profile and catalog (``frontdesk.business``); the print shop of
``frontdesk demo`` is one such tenant, seeded from ``demo/print-shop.yaml``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from frontdesk.business import BusinessStore, ItemFields
from frontdesk.business.text import pick
from frontdesk.packs._pack import Pack, PackDeps, TenantData
from frontdesk.packs.catalog.policies import DISCOVERY_DOMAINS, POLICIES
from frontdesk.packs.catalog.tools import build_tools

DATA_DIR = Path(__file__).with_name("data")
DEMO_DIR = Path(__file__).with_name("demo")
DEMO_BUSINESS_FILE = DEMO_DIR / "print-shop.yaml"
DEMO_POLICY_FILE = DEMO_DIR / "policy.json"
# The item index in the playbook names this many items; a larger catalog is found by search.
INDEXED_ITEMS = 60

PLAYBOOK = """\
# How to use the catalog's tools
- Prices, turnaround and minimum quantities come only from search_services / get_service_detail.
  An item whose price is "not set" is quoted by the team: offer to take the request instead.
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
# The catalog
- An item whose price is "not set" is quoted by the team: offer to take the request.
- capture_lead needs a name and a phone or e-mail: ask for what is missing, never guess it."""

FALLBACK_TEXTS = {
    "en": "Thanks for your message! I want to be sure I give you the right answer, "
    "so a member of our team will get back to you shortly.",
    "es": "¡Gracias por tu mensaje! Quiero asegurarme de darte la respuesta correcta, "
    "así que una persona de nuestro equipo te responderá en breve.",
    "vi": "Cảm ơn bạn đã nhắn tin! Để trả lời bạn thật chính xác, "
    "một nhân viên của chúng tôi sẽ liên hệ lại với bạn ngay.",
}

# What really happened, said before the hold message when the reply about it was refused.
OUTCOME_TEXTS = {
    "lead_captured": {
        "en": "Your request is saved for our team.",
        "es": "Tu solicitud ha quedado guardada para nuestro equipo.",
        "vi": "Yêu cầu của bạn đã được lưu cho nhân viên của chúng tôi.",
    },
    "follow_up_updated": {
        "en": "Your saved request has been updated.",
        "es": "Tu solicitud guardada se ha actualizado.",
        "vi": "Yêu cầu đã lưu của bạn đã được cập nhật.",
    },
    "follow_up_cancelled": {
        "en": "Your request has been cancelled.",
        "es": "Tu solicitud se ha cancelado.",
        "vi": "Yêu cầu của bạn đã được hủy.",
    },
    "customer_info_updated": {
        "en": "Your contact details are saved.",
        "es": "Tus datos de contacto han quedado guardados.",
        "vi": "Thông tin liên hệ của bạn đã được lưu.",
    },
    "handoff_triggered": {
        "en": "A person from our team now has this conversation.",
        "es": "Una persona de nuestro equipo ya tiene esta conversación.",
        "vi": "Một nhân viên của chúng tôi đã tiếp nhận cuộc trò chuyện này.",
    },
}

# The reply after a saved request or a hand-over when the model's own was refused: the values are
# what the tools were given and returned (``reasoning.courtesy``); ``contact`` is the phone or
# e-mail the request was saved with. A hand-over's reply names no time: none was promised.
COURTESY_TEXTS = {
    "lead_captured": {
        "en": "Thank you, {customer_name}! Your request for {service} is saved (reference {follow_up_id}). "
        "Our team will contact you at {contact}.",
        "es": "¡Gracias, {customer_name}! Tu solicitud de {service} quedó guardada (referencia {follow_up_id}). "
        "Nuestro equipo te contactará en {contact}.",
        "vi": "Cảm ơn {customer_name}! Yêu cầu {service} của bạn đã được lưu (mã {follow_up_id}). "
        "Nhân viên của chúng tôi sẽ liên hệ với bạn qua {contact}.",
    },
    "handoff_triggered": {
        "en": "Thank you for your patience. A person from our team now has this conversation "
        "(reference {task_id}) and will reply to you here.",
        "es": "Gracias por tu paciencia. Una persona de nuestro equipo ya tiene esta conversación "
        "(referencia {task_id}) y te responderá aquí.",
        "vi": "Cảm ơn bạn đã kiên nhẫn. Một nhân viên của chúng tôi đã tiếp nhận cuộc trò chuyện này "
        "(mã {task_id}) và sẽ trả lời bạn tại đây.",
    },
}

VOICE_FAILED_TEXTS = {
    "en": "Sorry, I couldn't make out your voice message. Could you type it for me?",
    "es": "Perdona, no pude entender tu mensaje de voz. ¿Podrías escribirlo?",
    "vi": "Xin lỗi, mình chưa nghe rõ tin nhắn thoại của bạn. Bạn có thể nhắn bằng chữ giúp mình không?",
}

# What a new tenant's owner has not written yet: sensible for any shop, each field editable in
# the console's policy page.
DEFAULT_POLICY = {
    "lead_capture_when": "Take down the request when the customer wants to order or get a quote and has given "
    "a name and a phone number or e-mail. Note the item, quantity, options and any deadline they mention.",
    "escalate_when": "Hand over to a person for complaints, refunds, anything urgent the catalog does not "
    "answer, or whenever the customer asks to speak to a person.",
    "out_of_scope": "Do not promise discounts, delivery dates or availability the team has not confirmed, and "
    "do not discuss anything unrelated to the business.",
    "tone": "Friendly, short and practical. Reply in the customer's language.",
    "operator_language": "en",
    "timezone": "UTC",
}


def _lexicons() -> dict[str, dict[str, list[str]]]:
    data: dict[str, dict[str, list[str]]] = json.loads((DATA_DIR / "lexicons.json").read_text(encoding="utf-8"))
    return data


def item_index(items: Sequence[ItemFields], language: str) -> str:
    """The playbook's lines naming the catalog's ids, so no model guesses one (names only: prices
    still come from tools); a large catalog names its first items and says to search."""
    active = [i for i in items if i.active]
    index = "; ".join(f"{i.id} = {i.display_name(language, language)}" for i in active[:INDEXED_ITEMS])
    lines = f"- Item ids (for get_service_detail and get_service_photos): {index}." if index else ""
    if len(active) > INDEXED_ITEMS:
        lines += f"\n- The catalog has {len(active)} items: find the others with search_services."
    return lines


def item_words(items: Iterable[ItemFields]) -> dict[str, list[str]]:
    """Item id -> every name and synonym, lower case: what the router listens for."""
    return {i.id: [w.lower() for w in i.words()] for i in items if i.active}


async def tenant_data(deps: PackDeps, tenant_id: str) -> TenantData:
    """The tenant's item words (the router finds a new item on the next turn), its item index
    (so no model guesses an id: names only, prices still come from tools) and its profile's
    description as the business description the owner has not written in the policy."""
    data = await BusinessStore(deps.db, deps.clock).read(tenant_id)
    default = data.default_language
    items = data.active_items
    description = pick(data.profile.description, default, default) if data.profile else ""
    return TenantData(
        revision=data.revision,
        item_words=item_words(items),
        playbook_lines=item_index(items, default),
        policy_defaults={"business_description": description[:1000]} if description else {},
        hold_texts=dict(data.profile.hold_message) if data.profile else {},
        data_languages=frozenset(lang for item in items for lang, text in item.name.items() if text),
    )


PACK = Pack(
    name="catalog",
    build_tools=build_tools,
    policies=POLICIES,
    discovery_domains=DISCOVERY_DOMAINS,
    lexicons=_lexicons(),
    default_policy=DEFAULT_POLICY,
    playbook=PLAYBOOK,
    compact_playbook=COMPACT_PLAYBOOK,
    fallback_texts=FALLBACK_TEXTS,
    outcome_texts=OUTCOME_TEXTS,
    courtesy_texts=COURTESY_TEXTS,
    voice_failed_texts=VOICE_FAILED_TEXTS,
    tenant_data=tenant_data,
)

__all__ = ["DEMO_BUSINESS_FILE", "DEMO_POLICY_FILE", "PACK", "item_index", "item_words"]
