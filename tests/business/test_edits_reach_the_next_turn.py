"""An owner's edit is what the next turn uses: the new price is quoted and the old one, still in
the conversation's tool ledger, proves nothing any more; a new item is heard by the router and
found by search, with no code or regex edited."""

from __future__ import annotations

from frontdesk.business import Actor, BusinessStore, ItemFields
from frontdesk.capabilities.tools import ToolContext
from frontdesk.demo import DEMO_TENANT, demo_business_file
from frontdesk.platform.clock import SystemClock
from harness import make_runtime, message, reply_texts, traces

CARDS = {"type": "service_presented", "service_id": "business-cards"}
QUOTE = {
    "name": "quote",
    "rules": [
        {
            "match": "(?i)how much",
            "responses": [
                {"tool": "get_service_detail", "args": {"service_id": "business-cards"}},
                {
                    "reply": {
                        "blocks": [{"type": "text", "text": "Business cards: {result:get_service_detail.price}"}],
                        "claims": [CARDS],
                    }
                },
            ],
        },
        # From memory: the price the tool ledger holds from an earlier turn.
        {
            "match": "(?i)still",
            "responses": [{"reply": {"blocks": [{"type": "text", "text": "Yes, $45 for 250."}], "claims": [CARDS]}}],
        },
    ],
}
ECHO = {"name": "echo", "default": [{"reply": "got it"}]}


def cards(**fields: object) -> ItemFields:
    spec = next(loaded.spec for loaded in demo_business_file().items if loaded.spec.id == "business-cards")
    return ItemFields.model_validate({**spec.model_dump(exclude={"photos"}), **fields})


async def test_after_a_price_edit_the_old_price_is_refused_and_the_next_quote_is_the_new_one(db):
    runtime, accounts = await make_runtime(db, QUOTE)
    store = BusinessStore(db, SystemClock())

    async def say(text: str) -> None:
        await runtime.ingestor.ingest(message(accounts.webchat_id, text, msg_id=f"{text}-{len(await traces(db))}"))
        await runtime.runner.run_until_idle()

    await say("how much are business cards?")
    await say("still that price?")  # the ledger proves $45: the owner has changed nothing yet
    new_price = {"currency": "USD", "unit": {"en": "cards"}, "tiers": [{"quantity": 250, "amount": 50}]}
    await store.save_item(DEMO_TENANT, cards(price=new_price), Actor(via="console"), create=False)
    await say("still that price now?")
    await say("how much are they now?")

    first, remembered, stale, fresh = await traces(db)
    assert [t.outcome for t in (first, remembered, stale, fresh)] == ["replied", "replied", "fallback", "replied"]
    texts = await reply_texts(db)
    assert texts[0] == "Business cards: $45 / 250 cards, $70 / 500 cards"
    assert texts[1] == "Yes, $45 for 250."
    assert "$45" not in texts[2]  # the hold message, not the old price
    assert texts[3] == "Business cards: $50 / 250 cards"


async def test_a_new_item_is_heard_by_the_router_and_found_on_the_next_turn(db):
    runtime, accounts = await make_runtime(db, ECHO)
    lanyards = ItemFields(
        id="lanyards",
        name={"en": "Printed lanyards"},
        synonyms={"en": ["lanyard"], "vi": ["dây đeo thẻ"]},
        price={"currency": "USD", "unit": {"en": "lanyards"}, "tiers": [{"quantity": 100, "amount": 120}]},
    )
    await runtime.ingestor.ingest(message(accounts.webchat_id, "do you do lanyards?", session="before"))
    await runtime.runner.run_until_idle()
    await BusinessStore(db, SystemClock()).save_item(DEMO_TENANT, lanyards, Actor(), create=True)
    await runtime.ingestor.ingest(message(accounts.webchat_id, "do you do lanyards?", session="after"))
    await runtime.ingestor.ingest(message(accounts.webchat_id, "có dây đeo thẻ không?", session="vi"))
    await runtime.runner.run_until_idle()

    before, after, vietnamese = await traces(db)
    assert "item_mentioned" not in before.route["signals"]
    assert "item_mentioned" in after.route["signals"]
    assert "item_mentioned" in vietnamese.route["signals"]
    assert (after.route["phase"], vietnamese.route["phase"]) == ("capture", "capture")
    search = {t.name: t for t in runtime.agent_packs["catalog"].catalog.tools}["search_services"]
    found = await search.handler(search.input_model(query="lanyards"), ToolContext(DEMO_TENANT, "c"))
    assert [r["id"] for r in found.output["results"]][:1] == ["lanyards"]
    assert found.evidence.prices == ("$120 / 100 lanyards",)
