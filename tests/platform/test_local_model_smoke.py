"""Smoke test through the real embedded model (llama.cpp + the built-in 1.5B weights, the ``local``
extra the test command installs): three print-shop turns through the whole pipeline.

It checks structure and the gate, never wording: every model output was a well-formed call of an
offered tool (the grammar's promise), every turn ended with a payload the customer received, and
what was sent either passed the verification gate or was the business's own hold message. About
a minute on two cores; the only test that runs a real model. It also pins the reuse of what llama.cpp
evaluated, across the steps of a turn and across turns, and the opening evaluated ahead."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from frontdesk.demo import seed_demo
from frontdesk.output.blocks import blocks_adapter
from frontdesk.packs.catalog import FALLBACK_TEXTS
from frontdesk.platform.models.local import LocalModelClient
from frontdesk.platform.models.local_weights import DEFAULT_LOCAL_MODEL
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import upgrade
from frontdesk.platform.store.schema import Message, Receipt, TurnTrace
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from frontdesk.turns.warm import warm_openings
from harness import FAST, message

MESSAGES = ("Hi there!", "How much do 500 business cards cost?", "Can I talk to a real person please?")


@pytest.fixture
async def local_runtime(tmp_path: Path):
    settings = Settings(
        **{**FAST, "workers": 1, "quiet_window_s": 0.05},
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'smoke.db'}",
        media_dir=tmp_path / "media",
        model_chat=f"local:{DEFAULT_LOCAL_MODEL}",
        model_timeout_s=120,
    )
    runtime = Runtime.build(settings, db=Database.from_url(settings.database_url))
    await upgrade(runtime.db)
    yield runtime
    await runtime.close()


async def test_three_print_shop_turns_through_the_local_model_ship_verified_payloads(local_runtime):
    runtime = local_runtime
    client = runtime.chat_client
    assert isinstance(client, LocalModelClient)
    accounts = await seed_demo(runtime.db, runtime.clock, runtime.channel_deps.media)
    assert runtime.agent is not None
    # As ``serve`` and the demo do at start: the business's opening evaluated before anyone writes.
    assert await warm_openings(runtime.db, runtime.agent, client) == 1
    # Another business's opening evaluated after it: the demo's is read back from the kept state.
    assert await client.prefill("You are the assistant of Other Shop, a bakery. " * 8) > 50
    for index, text in enumerate(MESSAGES):
        await runtime.ingestor.ingest(message(accounts.webchat_id, text, session=f"smoke-{index}"))
        await runtime.runner.run_until_idle()

    async with runtime.db.transaction() as session:
        traces = list(await session.scalars(select(TurnTrace).order_by(TurnTrace.id)))
        replies = list(await session.scalars(select(Message).where(Message.role == "assistant")))
        receipts = list(await session.scalars(select(Receipt)))

    assert len(traces) == len(MESSAGES) == len(replies)
    hold_messages = set(FALLBACK_TEXTS.values())
    for trace, reply in zip(traces, replies, strict=True):
        assert trace.model == client.name
        assert trace.outcome in ("replied", "fallback", "templated"), trace.detail
        offered = set(trace.tools_offered)
        for call in trace.tool_calls:  # the grammar admits only calls of offered tools, arguments an object
            assert call["name"] in offered, call
            assert isinstance(json.loads(call["args"]), dict), call
            # (a bound the grammar cannot express, such as a numeric maximum, is checked after the
            # call and answered with a retry: an "invalid arguments" error here is the design)
        assert "prose" not in (trace.detail or "")  # never free text in place of a call
        blocks = blocks_adapter.validate_json(reply.content)  # what went out is a valid payload
        assert blocks
        assert reply.turn_id == trace.id
        if trace.outcome == "fallback":  # the gate or the loop refused: only the business's own words go out
            assert len(blocks) == 1
            assert blocks[0].type == "text"
            assert blocks[0].text in hold_messages
        # What llama.cpp evaluated is reused: each later step reads back the whole prompt of the
        # step before (it only adds the newest call and its result), and every turn, the first
        # included, the opening every chat prompt shares. A step the grammar settled (one output
        # possible) ran no model: it has no prompt.
        evaluated = [u for u in trace.usage if u["input_tokens"]]
        for before, after in itertools.pairwise(evaluated):
            assert after["cache_read_tokens"] >= before["input_tokens"] - 2, trace.usage
        assert evaluated[0]["cache_read_tokens"] > 100, trace.usage
    assert {r.status for r in receipts} == {"sent"}
    # The model answers, not only the hold message: the greeting needs no tool, and a reply the
    # gate refuses twice would make this turn a fallback too.
    assert traces[0].outcome == "replied", traces[0].detail
