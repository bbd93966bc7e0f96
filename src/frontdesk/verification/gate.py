"""The verification gate (invariant 3): a reply ships only if everything it asserts is proven.

``verify`` audits the claims the model filed and the companion rules that catch what it did not
declare: every money amount in the text must be a price of a row a tool returned (this turn or
in the tool ledger window), every image URL must be a photo fetched this turn, and every phone
number or e-mail address must be one a tool returned or the customer gave. The loop turns a
rejection into one hinted retry, then a safe fallback; the gate only judges.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from frontdesk.context.ledgers import WorkingState
from frontdesk.platform.observability.tracing import VERIFY, stage
from frontdesk.verification.arithmetic import Amount, computed, counts_in, percents_in
from frontdesk.verification.assertions import CHANGED, FAMILIES, THIS_TURN, asserted_actions, proven
from frontdesk.verification.claims import (
    BusinessInfoStated,
    Claim,
    CustomerInfoUpdated,
    FollowUpUpdated,
    HandoffTriggered,
    ImagesShown,
    LeadCaptured,
    ServicePresented,
)
from frontdesk.verification.closed_world import Grounds, grounds_of, unproven
from frontdesk.verification.contacts import contact_values, keys_of, known
from frontdesk.verification.conversation import echoes, wrong_language
from frontdesk.verification.facts import fold, sentences
from frontdesk.verification.money import money_values, without_money
from frontdesk.verification.numbers import with_digits
from frontdesk.verification.offers import offered_phrases, unknown_offers, vocabulary
from frontdesk.verification.photos import PhotoCaptions, photo_caption_failures
from frontdesk.verification.tiers import tier_failures

# Every rule name a refusal may carry besides the claim types: what a rejection row, a trace and
# an eval scenario's ``claims_rejected`` name.
COMPANION_RULES = (
    "price", "image", "contact", "percentage", "offer", "time", "hours", "date", "turnaround", "address",
    "link", "quantity", "figure", "placeholder", "internal", "photo", "catalog", "language", "echo",
    *(f"undeclared {family.replace('_', ' ')}" for family in FAMILIES),
)  # fmt: skip

_IMAGE_URL = re.compile(r"https?://\S+?\.(?:png|jpe?g|gif|webp)\b", re.IGNORECASE)


@dataclass(frozen=True)
class ReplyContent:
    """What the customer would see, as the gate reads it: all visible text (bubbles and captions)
    and the URLs of the images sent."""

    text: str
    image_urls: tuple[str, ...] = ()
    image_groups: tuple[ImageGroup, ...] = ()


@dataclass(frozen=True)
class ImageGroup:
    """One image group as the customer sees it: its images, its caption, and the text right
    before it (what the images are shown as, when the caption does not say)."""

    urls: tuple[str, ...]
    caption: str = ""
    text_before: str = ""


@dataclass(frozen=True)
class Failure:
    """One reason a reply was refused. ``claim`` is the failed claim, None for a companion rule."""

    rule: str
    reason: str
    claim: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "reason": self.reason, "claim": self.claim}


@dataclass(frozen=True)
class Verdict:
    failures: tuple[Failure, ...] = field(default_factory=tuple)

    @property
    def accepted(self) -> bool:
        return not self.failures

    def hint(self) -> str:
        """What the model is told on its one retry: each failed claim or rule, and why."""
        lines = "\n".join(f"- {f.rule}: {f.reason}" for f in self.failures)
        return (
            "Your reply was NOT sent, because it asserts things no tool proved this turn:\n"
            f"{lines}\n"
            "Fetch what you need with a tool first, or remove the unproven statement and its claim, "
            "then call `reply` again."
        )


def verify(reply: ReplyContent, claims: Sequence[Claim], state: WorkingState) -> Verdict:
    with stage(VERIFY, {"frontdesk.claims": len(claims)}) as span:
        failures = [f for claim in claims if (f := _check_claim(claim, state)) is not None]
        failures.extend(companion_failures(reply, state, claims))
        span.set_attributes(
            {
                "frontdesk.accepted": not failures,
                "frontdesk.failures": len(failures),
                "frontdesk.failed_rules": sorted({f.rule for f in failures}),  # rule names, never reply text
            }
        )
    return Verdict(tuple(failures))


def companion_failures(reply: ReplyContent, state: WorkingState, claims: Sequence[Claim] = ()) -> list[Failure]:
    """The rules that hold whether or not the model declared anything (salvaged prose too)."""
    written = ReplyContent(with_digits(reply.text), reply.image_urls, reply.image_groups)
    grounds = grounds_of(state)
    groups = [(g.urls, with_digits(g.caption), with_digits(g.text_before)) for g in reply.image_groups]
    captions = PhotoCaptions((*state.earlier_evidence(), *state.turn_evidence))
    # Each item's price rows together: a row is told from its siblings, not from other items.
    price_groups = {
        tuple(rows)
        for e in (*state.turn_evidence, *state.earlier_evidence())
        for rows in (e.prices_by_reference.values() if e.prices_by_reference else [e.prices])
    }
    return [
        *_price_failures(written, state, claims, grounds),
        *(Failure(u.rule, u.reason) for u in tier_failures(written.text, price_groups)),
        *_image_failures(reply, state),
        *_contact_failures(written, state),
        *_action_failures(written, state),
        *(Failure(u.rule, u.reason) for u in unproven(written.text, groups, grounds)),
        *(Failure("photo", reason) for reason in photo_caption_failures(groups, captions)),
        *_offer_failures(written.text, state, grounds),
        *_conversation_failures(reply.text, state),
    ]


def _conversation_failures(text: str, state: WorkingState) -> list[Failure]:
    """The reply answers this customer: in their language, not with their own words."""
    failures = []
    if (reason := wrong_language(text, state.language)) is not None:
        failures.append(Failure("language", reason))
    if (reason := echoes(text, state.customer_message)) is not None:
        failures.append(Failure("echo", reason))
    return failures


def _offer_failures(text: str, state: WorkingState, grounds: Grounds) -> list[Failure]:
    if state.language is None or state.language not in state.data_languages or not offered_phrases(text):
        return []  # a reply in another language than the data: its words cannot be compared
    names = (name for names in grounds.item_words.values() for name in names)
    known = vocabulary((*grounds.tool_texts, *grounds.policy, *names))
    return [
        Failure(
            "catalog",
            f"{phrase!r}: {', '.join(missing)} is not in the business's own data; offer only what its tools "
            "and texts say it offers",
        )
        for phrase, missing in unknown_offers(text, known)
    ]


def _proven_events(state: WorkingState) -> set[tuple[str, str | None]]:
    """This turn's events, and earlier ones whose task is still open (a cancelled follow-up or a
    closed hand-off proves nothing any more)."""
    earlier = {(event, ref) for event, ref in state.recent_events() if ref is None or ref in state.open_references}
    return state.turn_events() | earlier


def _action_failures(reply: ReplyContent, state: WorkingState) -> list[Failure]:
    happened = {event for event, _ in _proven_events(state)}
    now = {event for event, _ in state.turn_events()}
    failures = []
    for family, words in asserted_actions(reply.text):
        if not proven(family, now if family in THIS_TURN else happened):
            failures.append(
                Failure(
                    f"undeclared {family.replace('_', ' ')}",
                    f"the reply says {words!r}, but no such action happened; do it with its tool first, "
                    "or do not say it",
                )
            )
        elif family == CHANGED:
            failures.extend(_changed_counts(reply.text, words, state))
    return failures


def _changed_counts(text: str, words: str, state: WorkingState) -> list[Failure]:
    """A change said with a count ("I've changed it to 10 people") must be the count the change
    recorded: the customer asked for 10, but the update may have saved 8, or only a note."""
    recorded = {n for e in state.turn_evidence if e.events for t in e.texts for n in re.findall(r"\d+", t)}
    sentence = next((s for s in sentences(text) if words in s), "")
    said = re.findall(r"(?<![\d.,:/$€£₫])\d+(?![\d.,:/%]|\s?(?:[$€£₫]|k\b))", without_money(sentence))
    return [
        Failure(
            "undeclared changed",
            f"the reply says the change made it {count}, but the change recorded no {count}; say what it recorded",
        )
        for count in dict.fromkeys(said)
        if count not in recorded
    ]


def _refs(events: set[tuple[str, str | None]], name: str) -> set[str | None]:
    return {ref for event, ref in events if event == name}


def _check_claim(claim: Claim, state: WorkingState) -> Failure | None:
    turn_events = state.turn_events()
    proven = _proven_events(state)
    described = claim.model_dump()

    def fail(reason: str) -> Failure:
        return Failure(claim.type, reason, described)

    if isinstance(claim, LeadCaptured):
        captured = _refs(proven, "lead_captured")
        if not captured and _refs(state.recent_events(), "lead_captured"):
            return fail("the follow-up of the earlier capture is closed: nothing is saved now")
        if not captured:
            return fail("no lead was captured: capture_lead did not run successfully")
        if claim.follow_up_id is not None and claim.follow_up_id not in captured:
            return fail(f"follow-up {claim.follow_up_id!r} is not a lead that was captured")
        return None
    if isinstance(claim, HandoffTriggered):
        if _refs(proven, "handoff_triggered"):
            return None
        if _refs(state.recent_events(), "handoff_triggered"):
            return fail("the earlier hand-off is closed: no person is taking over now")
        return fail("no hand-off happened: refer_to_human did not run successfully")
    if isinstance(claim, ServicePresented):
        known = _references(state)
        if claim.service_id not in known:
            return fail(f"service id {claim.service_id!r} was not returned by any tool (known: {_list(known)})")
        return None
    if isinstance(claim, BusinessInfoStated):
        # What the reply states (hours, an address, a phone) is checked span by span against what
        # backs it; the declaration alone proves and disproves nothing (a reply quoting a fetched
        # price was once refused for declaring it).
        return None
    if isinstance(claim, FollowUpUpdated):
        if claim.follow_up_id not in _refs(turn_events, "follow_up_updated"):
            return fail(f"follow-up {claim.follow_up_id!r} was not updated this turn")
        return None
    if isinstance(claim, CustomerInfoUpdated):
        if not _refs(turn_events, "customer_info_updated"):
            return fail("the customer's details were not saved this turn")
        return None
    if isinstance(claim, ImagesShown):
        fetched = _turn_photos(state)
        missing = [p for p in claim.photo_ids if p not in fetched]
        if missing:
            return fail(f"photos {_list(missing)} were not fetched this turn (fetched: {_list(fetched)})")
        return None
    return fail("unknown claim type")  # pragma: no cover - the union is closed


def _price_failures(
    reply: ReplyContent, state: WorkingState, claims: Sequence[Claim], grounds: Grounds
) -> list[Failure]:
    amounts = money_values(reply.text)
    if not amounts:  # no price said, none to prove (and the evidence's prices are not read)
        return []
    evidence = (*state.turn_evidence, *state.earlier_evidence())
    fetched = {(m.value, m.currency) for e in evidence for text in e.prices for m in money_values(text)}
    # An amount the business's own data states elsewhere (a deposit in its notes, a fee in its
    # policy) is a fact too; the customer's amounts are not ("is it $30?" proves no price).
    stated = [*(t for e in evidence for t in e.texts), *grounds.policy]
    fetched |= {(m.value, m.currency) for text in stated for m in money_values(with_digits(text))}
    # A reply that declares which services it presents may quote only their prices: "$70" is a
    # real price of business cards, not of wedding invitations.
    declared = [c.service_id for c in claims if isinstance(c, ServicePresented)]
    by_service: dict[str, set[tuple[Decimal, str | None]]] = {}
    for e in evidence:
        for ref, texts in e.prices_by_reference.items():
            by_service.setdefault(ref, set()).update((m.value, m.currency) for t in texts for m in money_values(t))
    # Bound when every declared service was really returned (a made-up id fails its own claim);
    # a service quoted on request has no price at all.
    known = _references(state)
    bound = bool(declared) and all(ref in known for ref in declared)
    allowed = set().union(*(by_service.get(ref, set()) for ref in declared)) if bound else fetched
    failures: list[Failure] = []
    # The customer's arithmetic, done from proven prices: counts the customer or the reply wrote,
    # percentages the business wrote (never the customer's: "can I get 50% off?" proves nothing).
    counts = counts_in([without_money(reply.text), *(with_digits(t) for t in state.customer_contacts)])
    discounts = _discounts(stated, by_service, grounds)
    for money in amounts:
        if any(money.value == value and money.currency in (None, currency) for value, currency in allowed):
            continue
        if computed(money, reply.text, amounts, allowed, counts, discounts):
            continue
        if bound and any(money.value == value for value, _ in fetched):
            reason = (
                f"the price {money.written} is not a price of the services the reply presents "
                f"({_list(declared)}); quote each service's own price and declare it (a service "
                "quoted on request has no price)"
            )
        else:
            reason = f"the price {money.written} does not match any price a tool returned; never invent prices"
        failures.append(Failure("price", reason))
    return failures


def _discounts(
    stated: Sequence[str], by_service: dict[str, set[Amount]], grounds: Grounds
) -> list[tuple[Decimal, set[Amount] | None]]:
    """Each percentage the business wrote, with the prices it may be taken from: a line naming
    items ("15% off all flyer orders") applies to their prices only; a line naming none, to any."""
    found: list[tuple[Decimal, set[Amount] | None]] = []
    for text in stated:
        percents = percents_in([text])
        if not percents:
            continue
        words = f" {fold(text)} "
        named = [ref for ref, names in grounds.item_words.items() if any(f" {fold(n)} " in words for n in names)]
        scope = set().union(*(by_service.get(ref, set()) for ref in named)) if named else None
        found.extend((p, scope) for p in percents)
    return found


def _image_failures(reply: ReplyContent, state: WorkingState) -> list[Failure]:
    allowed = {_normal_url(u) for u in _turn_photos(state).values()}
    urls = [*reply.image_urls, *_IMAGE_URL.findall(reply.text)]
    return [
        Failure("image", f"the image {url} is not a photo fetched this turn; show only photos a tool returned")
        for url in dict.fromkeys(urls)
        if _normal_url(url) not in allowed
    ]


def _contact_failures(reply: ReplyContent, state: WorkingState) -> list[Failure]:
    written = {v.key: v for v in contact_values(reply.text)}
    if not written:  # most replies: then the conversation's contacts are not read at all
        return []
    evidence = (*state.turn_evidence, *state.earlier_evidence())
    allowed = keys_of([*(c for e in evidence for c in e.contacts), *state.customer_contacts])
    return [
        Failure(
            "contact",
            f"the {value.kind} {value.written} is not one a tool returned or the customer gave; "
            "never invent contact details",
        )
        for value in written.values()
        if not known(value, allowed)
    ]


def _normal_url(url: str) -> str:
    """Scheme and host are case-insensitive and a default port is no port: the reply's URLs went
    through URL validation, the tool's did not."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    port = parts.port
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    netloc = host if port in (None, default) else f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def _references(state: WorkingState) -> set[str]:
    return {r for e in (*state.turn_evidence, *state.earlier_evidence()) for r in e.references}


def _turn_photos(state: WorkingState) -> dict[str, str]:
    return {pid: url for e in state.turn_evidence for pid, url in e.photos.items()}


def _list(values: Any) -> str:
    items = sorted(values)
    return ", ".join(map(str, items[:10])) or "none"
