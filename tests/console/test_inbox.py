"""The inbox: search over messages and contacts, views (mine, unassigned, handed over, needs
attention, unread) with their counts, read state per operator, assignment, the contact panel, and
the list kept live over SSE."""

from __future__ import annotations

import html
import json
import re

import httpx2
import pytest
from console_kit import AGENT, PRICE_SCRIPT, build_console, client, csrf_of, listening, png, served, sign_in
from sqlalchemy import select

from frontdesk.humans.console.operators import delete_operator
from frontdesk.humans.tasks import open_task
from frontdesk.platform.ids import TenantId
from frontdesk.platform.store.schema import Contact, Conversation, Message
from frontdesk.platform.store.schema_console import Operator

ROW = re.compile(r'<li class="row[^"]*" data-conversation="([^"]+)"')


def listed(html: str) -> list[str]:
    return ROW.findall(html)


def count_of(html: str, view: str) -> int:
    found = re.search(rf'data-count="{view}">(\d+)<', html)
    assert found, html
    return int(found[1])


async def _set_contact(db, conversation_id: str, **fields: str) -> None:
    """As a tool saves what the customer gave (an ORM write: the index follows it)."""
    async with db.transaction() as session:
        contact = await session.scalar(
            select(Contact)
            .join(Conversation, Conversation.contact_id == Contact.id)
            .where(Conversation.id == conversation_id)
        )
        assert contact is not None
        for name, value in fields.items():
            setattr(contact, name, value)


async def _handoff(console, conversation_id: str, title: str = "Customer asked for a person") -> None:
    async with console.runtime.db.transaction() as session:
        await open_task(
            session,
            tenant_id="demo",
            conversation_id=conversation_id,
            kind="handoff",
            priority="high",
            title=title,
            details={},
            now=console.clock.now(),
        )
    console.runtime.signals.publish(conversation_id)


@pytest.mark.parametrize("query", ["2125550199", "212-555-0199", "(212) 555 0199", "+1 212 555 0199"])
async def test_a_thread_is_found_by_the_phone_the_customer_wrote_however_it_is_typed(db, query):
    console = await build_console(db)
    ana = await console.customer_says("demo-webchat", "s-ana", "I'm Ana, +1 212 555 0199, I'd like 1000 flyers")
    bob = await console.customer_says("demo-webchat", "s-bob", "hello, do you print 212 posters?")
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        found = await http.get("/console/conversations", params={"q": query})

    assert found.status_code == 200
    assert listed(found.text) == [ana]
    assert bob not in found.text


async def test_a_phone_saved_on_the_contact_is_found_by_its_local_form(db):
    console = await build_console(db)
    conversation = await console.customer_says("demo-webchat", "s-vi", "Cho mình gặp nhân viên")
    await console.drain()
    await _set_contact(db, conversation, name="Lan", phone="+84 912 345 678")
    async with client(console) as http:
        await sign_in(http)
        local = await http.get("/console/conversations", params={"q": "0912 345 678"})
        by_name = await http.get("/console/conversations", params={"q": "lan"})

    assert listed(local.text) == [conversation]
    assert listed(by_name.text) == [conversation]
    assert ">Lan<" in local.text  # the row names the customer, not the web-chat session id


async def test_search_folds_accents_and_finds_the_beginning_of_words(db):
    console = await build_console(db)
    sunday = await console.customer_says("demo-webchat", "s-1", "Chủ nhật shop có mở cửa không?")
    await console.customer_says("demo-webchat", "s-2", "How much are business cards?")
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        plain = await http.get("/console/conversations", params={"q": "chu nhat"})
        accented = await http.get("/console/conversations", params={"q": "Chủ Nhật"})
        prefix = await http.get("/console/conversations", params={"q": "nha"})
        both_words = await http.get("/console/conversations", params={"q": "chu cards"})

    assert listed(plain.text) == listed(accented.text) == listed(prefix.text) == [sunday]
    assert listed(both_words.text) == []  # every word must be in one message


async def test_search_reads_the_assistants_replies_and_never_another_tenants_threads(db):
    console = await build_console(db)
    conversation = await console.customer_says("demo-webchat", "s-1", "ping")
    await console.drain()  # the scripted agent answers "echo: ping"
    async with client(console) as http:
        await sign_in(http)
        reply_word = await http.get("/console/conversations", params={"q": "echo"})
        other_tenant = await http.get("/console/conversations", params={"q": "other shop"})

    assert listed(reply_word.text) == [conversation]
    assert listed(other_tenant.text) == []
    assert console.ids["other_conversation"] not in other_tenant.text


async def test_a_search_of_punctuation_lists_nothing_and_an_overlong_one_is_refused(db):
    console = await build_console(db)
    await console.customer_says("demo-webchat", "s-1", "hello")
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        punctuation = await http.get("/console/conversations", params={"q": "?!"})
        overlong = await http.get("/console/conversations", params={"q": "x" * 101})
        bad_view = await http.get("/console/conversations", params={"view": "everything"})

    assert listed(punctuation.text) == []
    assert "No conversation matches." in punctuation.text
    assert overlong.status_code == bad_view.status_code == 422


async def test_read_state_is_each_operators_own(db):
    console = await build_console(db)
    conversation = await console.customer_says("demo-webchat", "s-1", "hi, anyone there?")
    await console.drain()
    async with client(console) as owner, client(console) as agent:
        await sign_in(owner)
        await sign_in(agent, AGENT)
        before = await owner.get("/console/conversations", params={"view": "unread"})
        await owner.get(f"/console/conversations/{conversation}")  # the owner reads it
        owner_after = await owner.get("/console/conversations", params={"view": "unread"})
        agent_after = await agent.get("/console/conversations", params={"view": "unread"})
        await console.customer_says("demo-webchat", "s-1", "hello??")
        owner_again = await owner.get("/console/conversations", params={"view": "unread"})

    assert listed(before.text) == [conversation]
    assert count_of(before.text, "unread") == 1
    assert listed(owner_after.text) == []
    assert count_of(owner_after.text, "unread") == 0
    assert listed(agent_after.text) == [conversation]
    assert listed(owner_again.text) == [conversation]  # a new customer message is unread again


async def test_assigning_a_thread_and_replying_to_one_fill_mine_and_unassigned(db):
    console = await build_console(db)
    first = await console.customer_says("demo-webchat", "s-1", "first customer")
    second = await console.customer_says("demo-webchat", "s-2", "second customer")
    await console.drain()
    async with client(console) as owner, client(console) as agent:
        await sign_in(owner)
        await sign_in(agent, AGENT)
        token = await csrf_of(owner, f"/console/conversations/{first}")
        assigned = await owner.post(f"/console/conversations/{first}/assign", data={"csrf": token, "assignee": "me"})
        agent_token = await csrf_of(agent)
        await agent.post(f"/console/conversations/{second}/reply", data={"csrf": agent_token, "text": "On it."})
        mine = await owner.get("/console/conversations", params={"view": "mine"})
        agents_mine = await agent.get("/console/conversations", params={"view": "mine"})
        unassigned = await owner.get("/console/conversations", params={"view": "unassigned"})
        panel = await owner.get(f"/console/conversations/{second}")
        stranger = await owner.post(
            f"/console/conversations/{first}/assign",
            data={"csrf": token, "assignee": console.ids["other_operator"]},
        )

    assert assigned.status_code == 303
    assert listed(mine.text) == [first]
    assert listed(agents_mine.text) == [second]  # replying to an unassigned thread takes it
    assert first not in listed(unassigned.text)
    assert second not in listed(unassigned.text)
    assert count_of(mine.text, "mine") == 1
    async with db.read() as session:
        agent_id = await session.scalar(select(Operator.id).where(Operator.email == AGENT))
    assert re.search(rf'<option value="{agent_id}" selected>', panel.text)
    assert stranger.status_code == 404  # another tenant's operator cannot be given the thread


async def test_handed_over_threads_have_their_view_count_and_the_tabs_title(db):
    console = await build_console(db)
    calm = await console.customer_says("demo-webchat", "s-1", "thanks!")
    upset = await console.customer_says("demo-webchat", "s-2", "I want a refund, get me a person")
    await console.drain()
    await _handoff(console, upset)
    async with client(console) as http:
        await sign_in(http)
        handed = await http.get("/console/conversations", params={"view": "handed_over"})
        everything = await http.get("/console/conversations")

    assert listed(handed.text) == [upset]
    assert calm in listed(everything.text)
    assert count_of(everything.text, "handed_over") == count_of(everything.text, "attention") == 1
    assert count_of(everything.text, "all") == 2
    assert "<title>(1) Conversations" in everything.text


async def test_the_contact_panel_shows_who_the_customer_is_and_what_they_asked_for(db):
    console = await build_console(db)
    conversation = await console.customer_says("demo-webchat", "s-ana", "I'd like 1000 flyers")
    await console.drain()
    await _set_contact(db, conversation, name="Ana", phone="+12125550199", email="ana@shop.example")
    async with db.transaction() as session:
        await open_task(
            session,
            tenant_id="demo",
            conversation_id=conversation,
            kind="follow_up",
            priority="normal",
            title="Flyers: 1000 A5 flyers, call back",
            details={},
            now=console.clock.now(),
        )
    await _handoff(console, conversation, "Wants to talk about a rush order")
    async with client(console) as http:
        await sign_in(http)
        page = await http.get(f"/console/conversations/{conversation}")

    panel = page.text.split('id="contact-panel"')[1]
    assert 'id="contact-name">Ana<' in panel
    assert 'href="tel:+12125550199"' in panel
    assert 'href="mailto:ana@shop.example"' in panel
    assert "Flyers: 1000 A5 flyers, call back" in panel.split('id="saved-requests"')[1]
    assert "Wants to talk about a rush order" in panel
    assert "s-ana" in panel  # the id the web chat knows them by


async def test_the_list_stream_announces_a_new_thread_and_its_partial_carries_the_counts(db):
    console = await build_console(db)
    await console.customer_says("demo-webchat", "s-1", "first")
    await console.drain()
    async with served(console) as base_url, httpx2.AsyncClient(base_url=base_url, timeout=10) as http:
        await sign_in(http)
        page = await http.get("/console/conversations")
        since = page.text.split("/console/inbox/stream?since=")[1].split('"')[0]

        waiting = await listening(http, "/console/inbox/stream", {"since": since})
        assert not waiting.done()  # nothing changed since the page was drawn
        newcomer = await console.customer_says("demo-webchat", "s-2", "a brand new customer")
        changed = await waiting
        partial = await http.get("/console/conversations", headers={"HX-Request": "true"})

    assert changed != since
    assert newcomer in listed(partial.text)
    assert 'id="views" hx-swap-oob="true"' in partial.text
    assert count_of(partial.text, "unread") == 2


async def test_deleting_an_operator_gives_their_threads_back_to_nobody(db):
    console = await build_console(db)
    conversation = await console.customer_says("demo-webchat", "s-1", "hello")
    await console.drain()
    async with client(console) as agent:
        await sign_in(agent, AGENT)
        token = await csrf_of(agent, f"/console/conversations/{conversation}")
        await agent.post(f"/console/conversations/{conversation}/assign", data={"csrf": token, "assignee": "me"})
    async with db.read() as session:
        agent_id = await session.scalar(select(Operator.id).where(Operator.email == AGENT))
    assert agent_id is not None
    await delete_operator(db, tenant_id="demo", operator_id=agent_id, actor=None, now=console.clock.now())
    async with client(console) as owner:
        await sign_in(owner)
        unassigned = await owner.get("/console/conversations", params={"view": "unassigned"})

    assert conversation in listed(unassigned.text)


async def test_a_thread_shows_photos_as_thumbnails_and_a_voice_note_with_its_transcript_verdict(db):
    console = await build_console(db)
    conversation = await console.customer_says("demo-webchat", "s-1", "photos of flyers please")
    await console.drain()
    photos = [
        {
            "type": "image_group",
            "urls": [f"https://cdn.shop.example/flyer-{n}.jpg" for n in (1, 2)],
            "caption": "Glossy A5 flyers",
        }
    ]
    verdict = {"quality": "uncertain", "note": "one word unclear: 'thirty' or 'forty'", "unclear_spans": []}
    async with db.transaction() as session:
        account = await session.scalar(select(Conversation.channel_account_id).where(Conversation.id == conversation))
        now = console.clock.now()
        session.add(
            Message(
                conversation_id=conversation, channel_account_id=account, role="assistant", content_type="blocks",
                content=json.dumps(photos), meta={"origin": "agent"}, status="ready", created_at=now,
            )
        )  # fmt: skip
        session.add(
            Message(
                conversation_id=conversation, channel_account_id=account, channel_message_id="voice-1", role="user",
                content_type="voice", content="I need thirty flyers by Friday", meta={"transcript": verdict},
                status="ready", created_at=now,
            )
        )  # fmt: skip
    async with client(console) as http:
        await sign_in(http)
        page = await http.get(f"/console/conversations/{conversation}")
        found = await http.get("/console/conversations", params={"q": "thirty flyers"})

    assert re.findall(r'<img src="(https://cdn\.shop\.example/[^"]+)"', page.text) == [
        "https://cdn.shop.example/flyer-1.jpg",
        "https://cdn.shop.example/flyer-2.jpg",
    ]
    assert "<figcaption>Glossy A5 flyers</figcaption>" in page.text
    assert "Voice note, as transcribed:" in page.text
    assert "transcript uncertain" in page.text
    assert "one word unclear: &#39;thirty&#39; or &#39;forty&#39;" in page.text
    assert listed(found.text) == [conversation]  # a transcript is searched like any message


async def test_a_photo_the_customer_sent_shows_as_a_thumbnail_behind_a_signed_link(db):
    console = await build_console(db)
    conversation = await console.customer_says("demo-webchat", "s-1", "here is my logo")
    await console.drain()
    photo = png(5, size=4)
    stored = await console.runtime.channel_deps.media.put(TenantId("demo"), photo, "image/png")
    async with db.transaction() as session:
        account = await session.scalar(select(Conversation.channel_account_id).where(Conversation.id == conversation))
        session.add(
            Message(
                conversation_id=conversation, channel_account_id=account, channel_message_id="photo-1", role="user",
                content_type="image", content="", meta={"media_key": stored.key}, status="ready",
                created_at=console.clock.now(),
            )
        )  # fmt: skip
    async with client(console) as http:
        await sign_in(http)
        page = await http.get(f"/console/conversations/{conversation}")
        (link,) = re.findall(r'<img src="(/media/m/[^"]+)" alt="Photo the customer sent"', page.text)
        served = await http.get(html.unescape(link))
        forged = await http.get(html.unescape(link).replace("sig=", "sig=0"))

    assert "[image]" not in page.text.split('id="messages"')[1]  # the thread shows it, not its placeholder
    assert served.status_code == 200
    assert served.content == photo
    assert forged.status_code == 401  # a link whose signature does not match serves nothing


async def test_an_ai_replys_trace_shows_what_each_tool_returned(db):
    console = await build_console(db, PRICE_SCRIPT)
    conversation = await console.customer_says("demo-webchat", "s-1", "How much are business cards?")
    await console.drain()
    async with client(console) as http:
        await sign_in(http)
        page = await http.get(f"/console/conversations/{conversation}")

    trace = page.text.split('class="trace"')[1]
    assert "<code>get_service_detail</code>" in trace
    evidence = trace.split("what it returned</summary><pre>")[1].split("</pre>")[0]
    assert "$45" in evidence  # the price the reply quoted, as the tool gave it
