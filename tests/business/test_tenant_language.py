"""A message that says nothing of its language is taken to be in the business's default language:
a bakery in Saigon that answers in Vietnamese first is asked in Vietnamese, even without the
letters only Vietnamese uses."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from frontdesk.packs.catalog import FALLBACK_TEXTS
from frontdesk.platform.store.schema import Tenant
from harness import make_runtime, message, reply_texts, traces

UNSURE = {"name": "unsure", "default": [{"reply": {"blocks": [{"type": "text", "text": "Only $9!"}], "claims": []}}]}


@pytest.mark.parametrize(("languages", "expected"), [(["vi", "en"], "vi"), (["en", "vi"], "en")])
async def test_a_first_message_without_language_evidence_is_in_the_business_default_language(db, languages, expected):
    runtime, accounts = await make_runtime(db, UNSURE)
    async with db.transaction() as session:
        await session.execute(update(Tenant).values(languages=languages))
    await runtime.ingestor.ingest(message(accounts.webchat_id, "Có bánh mì chay không?"))
    await runtime.runner.run_until_idle()

    (trace,) = await traces(db)
    assert trace.route["language"] == expected
    # The invented price is refused, and the hold message is in that language too.
    assert await reply_texts(db) == [FALLBACK_TEXTS[expected]]
