"""A bad reply becomes a test: "save as scenario" on an AI turn writes a scenario file that
``frontdesk eval`` runs green with the operator's correction, and that fails when the reply the
customer really read comes back. The customer's phone never leaves the tenant; only an owner
downloads the file."""

from __future__ import annotations

import html
import re

import yaml
from console_kit import AGENT, BAD_ADVICE, BAD_SCRIPT, build_console, client, csrf_of, sign_in
from sqlalchemy import select

from frontdesk.evals.runner import run_scenario
from frontdesk.evals.scenario import load_scenario
from frontdesk.platform.store.schema import Message
from frontdesk.platform.store.schema_console import AuditEntry
from frontdesk.platform.store.schema_inbox import SavedScenario

PHONE = "0903 123 456"
SAVE = re.compile(r'href="(/console/conversations/[^"]+/turns/(\d+)/scenario)"')
REPLY = re.compile(r'<textarea name="reply"[^>]*>(.*?)</textarea>', re.S)


async def _conversation(console) -> str:
    conversation_id = await console.customer_says("demo-webchat", "s1", f"hi, I'm Ana, my number is {PHONE}")
    await console.drain()
    await console.customer_says("demo-webchat", "s1", "how much are business cards?")
    await console.drain()
    return conversation_id


async def _sent_blocks(db, conversation_id: str) -> list[dict]:
    async with db.read() as session:
        last = await session.scalar(
            select(Message)
            .where(Message.conversation_id == conversation_id, Message.role == "assistant")
            .order_by(Message.id.desc())
        )
    assert last is not None
    return yaml.safe_load(last.content)  # JSON is YAML


async def test_a_saved_scenario_passes_with_the_correction_and_fails_on_the_reply_that_was_sent(db, tmp_path):
    console = await build_console(db, BAD_SCRIPT)
    conversation_id = await _conversation(console)
    sent = await _sent_blocks(db, conversation_id)
    assert sent[1]["text"] == BAD_ADVICE  # it shipped: the gate had nothing to refuse
    price = sent[0]["text"]

    async with client(console) as http:
        await sign_in(http)
        page = (await http.get(f"/console/conversations/{conversation_id}")).text
        links = SAVE.findall(page)
        assert len(links) == 2  # one per AI turn
        action = links[-1][0]
        form = (await http.get(action)).text
        # The reply it should have sent starts as the one that was sent, for the operator to edit.
        assert html.unescape(REPLY.search(form)[1]) == f"{price}\n\n{BAD_ADVICE}"
        token = await csrf_of(http, action)
        saved = await http.post(
            action,
            data={
                "csrf": token,
                "note": f"Never talk a customer out of what they asked for (Ana, {PHONE}).",
                "reply": f"{price}\n\nShall I save a request so the team can prepare a proof?",
            },
        )
        assert saved.status_code == 303
        assert saved.headers["location"].startswith("/console/scenarios#scenario-")
        listed = (await http.get("/console/scenarios")).text
        download = await http.get(re.search(r'href="(/console/scenarios/\d+\.yaml)"', listed)[1])

    assert "Never talk a customer out of what they asked for" in listed
    assert "skip business cards and order stickers instead" in html.unescape(listed)  # must not say
    assert download.status_code == 200
    assert download.headers["content-disposition"].startswith("attachment;")
    content = download.text
    # Nothing personal in the file: the customer's number has a stand-in everywhere.
    assert "903" not in content.replace("+1 202 555 0100", "")
    assert "+1 202 555 0100" in content

    file = tmp_path / "saved.yaml"
    file.write_text(content, encoding="utf-8")
    corrected = await run_scenario(load_scenario(file))
    assert corrected.passed, (corrected.failures, corrected.error)
    assert corrected.turns == 2
    assert corrected.checks >= 2

    # The reply the customer read, replayed in the flagged turn: the file fails, naming the advice.
    data = yaml.safe_load(content)
    flagged = data["model"]["script"]["rules"][0]["responses"]
    flagged[-1] = {"reply": {"blocks": sent, "claims": flagged[-1]["reply"]["claims"]}}
    replayed_file = tmp_path / "replayed.yaml"
    replayed_file.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    replayed = await run_scenario(load_scenario(replayed_file))
    assert not replayed.passed
    assert any(f.startswith("turn 2: reply contains") and "stickers" in f for f in replayed.failures), replayed.failures

    async with db.read() as session:
        row = await session.scalar(select(SavedScenario).where(SavedScenario.tenant_id == "demo"))
        audited = await session.scalar(select(AuditEntry).where(AuditEntry.action == "scenario.saved"))
    assert row is not None
    assert audited is not None
    assert audited.target == str(row.id)
    assert PHONE not in row.note
    assert PHONE not in row.content


async def test_a_correction_that_changes_nothing_or_that_could_never_pass_is_refused_and_nothing_is_kept(db):
    console = await build_console(db, BAD_SCRIPT)
    conversation_id = await _conversation(console)
    async with client(console) as http:
        await sign_in(http)
        page = (await http.get(f"/console/conversations/{conversation_id}")).text
        action = SAVE.findall(page)[0][0]
        token = await csrf_of(http, action)
        same = await http.post(action, data={"csrf": token, "note": "bad", "reply": "Hello! How can I help?"})
        blank = await http.post(action, data={"csrf": token, "note": "  ", "reply": "Hi there!"})
        price_turn = SAVE.findall(page)[-1][0]
        # A price the catalog does not have: the gate would refuse it, so the file could never pass.
        unproven = await http.post(
            price_turn, data={"csrf": token, "note": "cheaper", "reply": "Business cards: $5 / 250 cards."}
        )
    # Refused, and shown again with what the operator wrote and why.
    assert same.status_code == 422
    assert "change what was wrong" in same.text
    assert ">bad</textarea>" in same.text
    assert blank.status_code == 422
    assert "Hi there!</textarea>" in blank.text
    assert unproven.status_code == 422
    assert "with this reply the conversation does not play as it should" in unproven.text
    assert "$5 / 250 cards" in unproven.text
    async with db.read() as session:
        assert await session.scalar(select(SavedScenario).where(SavedScenario.tenant_id == "demo")) is None


async def test_only_an_owner_downloads_and_turns_of_other_threads_are_not_found(db):
    console = await build_console(db, BAD_SCRIPT)
    conversation_id = await _conversation(console)
    other = await console.customer_says("demo-webchat", "s2", "hello")
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        page = (await http.get(f"/console/conversations/{conversation_id}")).text
        action, turn = SAVE.findall(page)[-1]
        token = await csrf_of(http, action)
        fields = {"csrf": token, "note": "no stickers", "reply": "Business cards, sure."}
        # The turn exists, but in another thread; and the other tenant's thread is not ours.
        elsewhere = await http.post(f"/console/conversations/{other}/turns/{turn}/scenario", data=fields)
        foreign = console.ids["other_conversation"]
        other_tenant = await http.post(f"/console/conversations/{foreign}/turns/{turn}/scenario", data=fields)
        saved = await http.post(action, data=fields)
        scenario_path = f"/console/scenarios/{saved.headers['location'].rpartition('-')[2]}.yaml"
        assert (await http.get(scenario_path)).status_code == 200
    async with client(console) as http:
        await sign_in(http, AGENT)
        listed = (await http.get("/console/scenarios")).text
        refused = await http.get(scenario_path)
    assert elsewhere.status_code == 404
    assert other_tenant.status_code == 404
    assert saved.status_code == 303
    assert "no stickers" in listed
    assert scenario_path not in listed
    assert refused.status_code == 403
