"""Grounded turns through the pipeline: what the trace records, the cacheable prefix, the bundle
as a hard boundary, the gate's hint-retry-then-fallback, and the tool ledger across turns."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from frontdesk.context.budget import MESSAGE_OVERHEAD_TOKENS
from frontdesk.context.identity import prefix_hash
from frontdesk.output.blocks import blocks_adapter
from frontdesk.packs.catalog import FALLBACK_TEXTS
from frontdesk.platform.store.schema import ClaimRejection, Contact, Notification, Task, Tenant
from frontdesk.platform.tokens import count_tokens
from harness import (
    converse,
    count,
    demo_photo_url,
    demo_prefix,
    make_runtime,
    message,
    replies,
    reply,
    reply_texts,
    traces,
)

PUBLIC = "http://frontdesk.test"
PHOTO = demo_photo_url("business-cards-1", PUBLIC)
ECHO = {"name": "echo", "default": [reply("got: {user_text}")]}
CATALOG_TOOLS = ["search_services", "get_service_detail"]  # photos only when asked for
CARDS = {"type": "service_presented", "service_id": "business-cards"}
DETAIL = {"tool": "get_service_detail", "args": {"service_id": "business-cards"}}


def answer(text: str, *claims: dict[str, Any], images: list[str] | None = None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if images:
        blocks.append({"type": "image_group", "urls": images})
    return {"reply": {"blocks": blocks, "claims": list(claims)}}


async def rejections(db) -> list[ClaimRejection]:
    async with db.transaction() as session:
        return list(await session.scalars(select(ClaimRejection).order_by(ClaimRejection.id)))


async def expected_prefix_hash(db, policy: dict[str, str] | None = None) -> str:
    return prefix_hash(await demo_prefix(db, policy))


# -- the trace


async def test_trace_records_route_bundle_prefix_prompt_size_and_accepted_claims(db):
    script = {"name": "quote", "default": [DETAIL, answer("Business cards are $45 per 250 cards.", CARDS)]}
    await converse(db, script, ("s1", "How much are business cards?"))

    (trace,) = await traces(db)
    assert (trace.outcome, trace.steps) == ("replied", 2)
    assert {k: trace.route[k] for k in ("intent", "domains", "language", "phase")} == {
        "intent": "detail_question",
        "domains": ["catalog"],
        "language": "en",
        "phase": "capture",
    }
    assert trace.tools_offered == CATALOG_TOOLS
    assert trace.prefix_hash == await expected_prefix_hash(db)
    prefix = await demo_prefix(db)
    size = trace.prompt_size
    assert size["static_prefix_tokens"] == count_tokens(prefix) + MESSAGE_OVERHEAD_TOKENS
    assert size["batch_tokens"] == count_tokens("How much are business cards?") + MESSAGE_OVERHEAD_TOKENS
    assert (size["history_messages"], size["history_tokens"]) == (0, 0)
    parts = ("static_prefix_tokens", "tool_schema_tokens", "history_tokens", "tail_tokens", "batch_tokens")
    assert size["total_tokens"] == sum(size[k] for k in parts) == size["estimated_tokens"]
    assert 0 < size["tool_schema_tokens"] <= size["tool_schema_budget_tokens"]
    assert trace.claims == [CARDS]
    assert [(c["name"], c["ok"]) for c in trace.tool_calls] == [("get_service_detail", True)]
    # The evidence the console shows: what the tool returned, as the model was shown it.
    assert "$45" in trace.tool_calls[0]["result"]


async def test_route_language_follows_the_customer(db):
    await converse(
        db,
        ECHO,
        ("en", "hello"),
        ("es", "¿Cuánto cuestan las tarjetas de presentación?"),
        ("vi", "Xin chào, giá in danh thiếp bao nhiêu?"),
    )

    assert [t.route["language"] for t in await traces(db)] == ["en", "es", "vi"]


async def test_prefix_hash_is_stable_across_turns_and_conversations_until_the_policy_changes(db):
    conv = await converse(db, ECHO, ("alice", "hello"), ("alice", "thanks!"), ("bob", "hi there"))
    before = await expected_prefix_hash(db)
    async with db.transaction() as session:
        await session.execute(update(Tenant).values(policy={"tone": "Very formal. Always say sir or madam."}))
    runtime, accounts = await make_runtime(db, ECHO)
    await runtime.ingestor.ingest(message(accounts.webchat_id, "hello again", session="alice"))
    await runtime.runner.run_until_idle()

    hashes = [t.prefix_hash for t in await traces(db)]
    assert hashes[:3] == [before] * 3
    assert hashes[3] == await expected_prefix_hash(db, {"tone": "Very formal. Always say sir or madam."})
    assert hashes[3] != hashes[0]
    assert [t.conversation_id for t in await traces(db)] == [conv["alice"], conv["alice"], conv["bob"], conv["alice"]]


# -- the bundle is a boundary


async def test_tool_outside_the_bundle_is_never_run_and_is_recorded_as_not_offered(db):
    lead = {
        "service": "business-cards",
        "customer_name": "Mallory",
        "phone": "+1 555 000 1111",
        "summary_for_team": "wants cards",
    }
    script = {"name": "eager", "default": [{"tool": "capture_lead", "args": lead}, reply("Hi! How can I help?")]}
    await converse(db, script, ("s1", "hello"))

    (trace,) = await traces(db)
    assert (trace.route["intent"], trace.tools_offered) == ("greeting", [])
    (call,) = trace.tool_calls
    assert (call["name"], call["ok"], call["error"]) == ("capture_lead", False, "not offered this turn")
    assert await count(db, Task) == 0
    assert await count(db, Notification) == 0
    assert await count(db, Contact, Contact.name.is_not(None)) == 0
    assert await reply_texts(db) == ["Hi! How can I help?"]


# -- the gate: one hinted retry, then the fallback


LIE = answer("Done! I've saved your request, we'll call you.", {"type": "lead_captured"})
LIE_AGAIN = answer("All set: your request is saved.", {"type": "lead_captured"})
HONEST = answer("I can save that for you: what's your name and a phone number or e-mail?")


async def test_false_claim_twice_ships_the_english_fallback_and_records_both_rejections(db):
    await converse(db, {"name": "liar", "default": [LIE, LIE_AGAIN]}, ("s1", "I'd like to order business cards"))

    assert await reply_texts(db) == [FALLBACK_TEXTS["en"]]
    (trace,) = await traces(db)
    assert (trace.outcome, trace.claims) == ("fallback", [])
    first, second = await rejections(db)
    assert [(r.attempt, r.turn_id) for r in (first, second)] == [(1, trace.id), (2, trace.id)]
    assert [r.reply_text for r in (first, second)] == [
        "Done! I've saved your request, we'll call you.",
        "All set: your request is saved.",
    ]
    for rejection in (first, second):
        assert rejection.claims == [{"type": "lead_captured", "follow_up_id": None}]
        assert "lead_captured" in [f["rule"] for f in rejection.failures]
        assert rejection.failures[0]["claim"]["type"] == "lead_captured"


async def test_honest_reply_after_the_hint_ships_and_one_rejection_is_recorded(db):
    await converse(db, {"name": "repentant", "default": [LIE, HONEST]}, ("s1", "I'd like to order business cards"))

    assert await reply_texts(db) == ["I can save that for you: what's your name and a phone number or e-mail?"]
    (trace,) = await traces(db)
    assert (trace.outcome, trace.claims) == ("replied", [])
    (rejection,) = await rejections(db)
    assert (rejection.attempt, rejection.turn_id) == (1, trace.id)
    assert "lead_captured" in [f["rule"] for f in rejection.failures]


async def test_spanish_question_that_fails_twice_gets_the_spanish_fallback(db):
    script = {"name": "liar-es", "default": [answer("Las tarjetas cuestan solo $19.")]}
    await converse(db, script, ("s1", "¿Cuánto cuestan las tarjetas de presentación?"))

    assert await reply_texts(db) == [FALLBACK_TEXTS["es"]]
    (trace,) = await traces(db)
    assert (trace.outcome, trace.route["language"]) == ("fallback", "es")
    assert [[f["rule"] for f in r.failures] for r in await rejections(db)] == [["price"], ["price"]]


# -- the tool ledger across turns


FETCH_AND_SHOW = {
    "match": "(?i)how much",
    "responses": [
        {"tools": [DETAIL, {"tool": "get_service_photos", "args": {"service_id": "business-cards", "limit": 1}}]},
        answer(
            "Business cards are $45 per 250 cards.",
            CARDS,
            {"type": "images_shown", "photo_ids": ["{result:get_service_photos.photos.0.id}"]},
            images=["{result:get_service_photos.photos.0.url}"],
        ),
    ],
}


async def test_price_fetched_in_an_earlier_turn_may_be_quoted_without_fetching_again(db):
    script = {
        "name": "ledger-price",
        "rules": [FETCH_AND_SHOW, {"match": "250", "responses": [answer("Yes: 250 cards are $45.", CARDS)]}],
    }
    conv = await converse(
        db,
        script,
        ("alice", "How much are business cards? Any photos?"),
        ("alice", "ok, so 250 cards then?"),
        ("bob", "ok, so 250 cards then?"),  # nothing fetched in this conversation
    )

    first, second, other = await traces(db)
    assert (first.outcome, second.outcome) == ("replied", "replied")
    assert second.tool_calls == []
    assert second.claims == [CARDS]
    assert (await reply_texts(db))[1] == "Yes: 250 cards are $45."
    assert (other.conversation_id, other.outcome) == (conv["bob"], "fallback")
    assert {r.turn_id for r in await rejections(db)} == {other.id}


async def test_photo_shown_in_an_earlier_turn_cannot_be_shown_again_without_fetching_it(db):
    again = answer("Here it is again!", {"type": "images_shown", "photo_ids": ["business-cards-1"]}, images=[PHOTO])
    script = {"name": "ledger-photo", "rules": [FETCH_AND_SHOW, {"match": "(?i)again", "responses": [again]}]}
    await converse(
        db,
        script,
        ("s1", "How much are business cards? Any photos?"),
        ("s1", "can I see that photo again?"),
        public_url=PUBLIC,
    )

    first, second = await traces(db)
    assert (first.outcome, second.outcome) == ("replied", "fallback")
    shown_first, shown_second = (blocks_adapter.validate_json(m.content) for m in await replies(db))
    assert [str(u) for b in shown_first if b.type == "image_group" for u in b.urls] == [PHOTO]
    assert [b.type for b in shown_second] == ["text"]
    assert await reply_texts(db) == ["Business cards are $45 per 250 cards.\n\n[1 image(s)]", FALLBACK_TEXTS["en"]]
    found = await rejections(db)
    assert [(r.turn_id, r.attempt) for r in found] == [(second.id, 1), (second.id, 2)]
    for rejection in found:
        rules = {f["rule"]: f["reason"] for f in rejection.failures}
        assert set(rules) == {"images_shown", "image"}
        assert PHOTO in rules["image"]
