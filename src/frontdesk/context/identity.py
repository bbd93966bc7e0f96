"""Identity & policy: the operator's plain-language fields plus the playbook owned by code.

Together they are the prompt's static prefix: emitted first, changed only when an operator edits
policy (or a release edits the playbook), and hashed so a trace shows when the provider's prompt
cache was invalidated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from frontdesk.errors import ConfigError

LANGUAGE_NAMES = {"en": "English", "es": "Spanish", "vi": "Vietnamese", "fr": "French", "de": "German"}
# "Reply in <language>", said in that language: a small model that read English tool results
# answered a Vietnamese customer in English when told so in English only.
REPLY_IN = {
    "en": "Reply to the customer in English.",
    "es": "Responde al cliente en español.",
    "vi": "Trả lời khách bằng tiếng Việt.",
    "fr": "Réponds au client en français.",
    "de": "Antworte dem Kunden auf Deutsch.",
}
# The first word of a reply written under a grammar, where a small model needs more than being told
# the language. Told "Trả lời khách bằng tiếng Việt." the 1.5B model still answered four of ten
# Vietnamese turns in English, word for word the same again after the gate's hint; a reply that
# starts with "Dạ," (the polite "yes" a Vietnamese shop starts an answer with) goes on in Vietnamese.
REPLY_OPENINGS = {"vi": "Dạ,"}


class IdentityPolicy(BaseModel):
    """What the business owner writes. Every field is plain language, capped so one edit cannot
    blow up every prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    business_description: str = Field(default="", max_length=1000)
    lead_capture_when: str = Field(default="", max_length=600)
    escalate_when: str = Field(default="", max_length=600)
    out_of_scope: str = Field(default="", max_length=600)
    tone: str = Field(default="", max_length=300)
    operator_language: str = Field(default="en", pattern=r"^[a-z]{2}$")
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def operator_language_name(self) -> str:
        return LANGUAGE_NAMES.get(self.operator_language, self.operator_language)


def merge_policy(defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> IdentityPolicy:
    """The pack's defaults with the operator's edits on top. A stored policy that no longer
    validates is a configuration error, reported with the field at fault."""
    try:
        return IdentityPolicy.model_validate({**defaults, **overrides})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid identity policy: {problems}") from exc


PLAYBOOK = """\
You are the customer assistant of {business}, answering its customers on a messaging channel.

# Fixed rules
- Answer only by calling the `reply` tool exactly once, as your last step, with the whole reply
  as blocks. Text outside `reply` never reaches the customer.
- Never invent prices, availability, photos, ids or facts. Fetch before quoting: a price may
  appear in your reply only if a tool returned it; an image only if a tool returned it this turn.
- Declare in `claims` every evidence-bearing assertion your reply makes:
  lead_captured (you saved the request), handoff_triggered (you handed over to a person),
  service_presented {{service_id}} (you present or quote a service; the id must come from a tool),
  business_info_stated (you give hours, address or contact details), follow_up_updated
  {{follow_up_id}}, customer_info_updated, images_shown {{photo_ids}}.
  A reply whose claims are not backed by what the tools really returned is refused.
- Never say you did something (saved, booked, forwarded, updated) unless the tool for it ran.
- Several customer messages may arrive together; answer all of them in one reply.
- Reply in the customer's language. Keep replies short and friendly.
- Notes written for the team (lead summaries, hand-off reasons) are in {operator_language}.

# The business, in the owner's words
About the business: {business_description}
When to capture a lead: {lead_capture_when}
When to hand over to a person: {escalate_when}
Out of scope: {out_of_scope}
Tone: {tone}"""


# For a small model (``ContextBudget.compact``): the same rules in a third of the words. The
# answer format and the claims live in the embedded model's own tool section, and the grammar
# enforces them; the verification gate stays the same, so nothing here is weaker, only shorter.
COMPACT_PLAYBOOK = """\
You are the customer assistant of {business}, answering its customers on a messaging channel.
- State only what a tool returned: never invent a price, turnaround, photo, id or opening hour.
- Never say you saved, forwarded or changed something unless its tool ran this turn.
- Answer every customer message of the turn in one reply, in the customer's language, short and friendly.
- Notes for the team (lead summaries, hand-over reasons) are in {operator_language}."""

# The owner's fields a compact prompt keeps (when written): what the business is, and when to
# save a request or hand over. Tone and out-of-scope advice are where a small model gains least.
COMPACT_POLICY_FIELDS = {
    "business_description": "About the business",
    "lead_capture_when": "When to save a request",
    "escalate_when": "When to hand over to a person",
}


def static_prefix(
    business_name: str,
    policy: IdentityPolicy,
    pack_playbook: str,
    *,
    compact: bool = False,
    compact_playbook: str | None = None,
) -> str:
    """The cacheable head of every prompt: no clock, no customer, nothing that changes per turn.
    ``compact``: the short version for a small model, with the pack's ``compact_playbook`` if it
    has one."""
    if compact:
        return _compact_prefix(business_name, policy, pack_playbook if compact_playbook is None else compact_playbook)
    text = PLAYBOOK.format(
        business=business_name,
        operator_language=policy.operator_language_name,
        business_description=policy.business_description or "(not written yet)",
        lead_capture_when=policy.lead_capture_when or "(not written yet)",
        escalate_when=policy.escalate_when or "(not written yet)",
        out_of_scope=policy.out_of_scope or "(not written yet)",
        tone=policy.tone or "(not written yet)",
    )
    return f"{text}\n\n{pack_playbook.strip()}" if pack_playbook.strip() else text


def tenant_playbooks(playbook: str, compact_playbook: str | None, tenant_lines: str) -> tuple[str, str | None]:
    """A pack's playbooks with the lines one tenant's own data adds (its item index)."""
    if not tenant_lines:
        return playbook, compact_playbook
    return f"{playbook}\n{tenant_lines}", f"{compact_playbook or playbook}\n{tenant_lines}"


def prefix_hash(prefix: str) -> str:
    return hashlib.sha256(prefix.encode("utf-8")).hexdigest()


def _compact_prefix(business_name: str, policy: IdentityPolicy, pack_playbook: str) -> str:
    text = COMPACT_PLAYBOOK.format(business=business_name, operator_language=policy.operator_language_name)
    owner = [f"{label}: {value}" for name, label in COMPACT_POLICY_FIELDS.items() if (value := getattr(policy, name))]
    parts = [text, "# The business\n" + "\n".join(owner) if owner else "", pack_playbook.strip()]
    return "\n\n".join(part for part in parts if part)
