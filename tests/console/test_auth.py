"""Sign-in: argon2id hashes, wrong passwords, the rate limit, session expiry, sign-out, roles."""

from __future__ import annotations

from datetime import timedelta

from console_kit import AGENT, OWNER, PASSWORD, build_console, client, csrf_of, sign_in
from sqlalchemy import select

from frontdesk.platform.store.schema_console import AuditEntry, ConsoleSession, Operator


async def test_operator_password_is_stored_as_an_argon2id_hash(db):
    await build_console(db)
    async with db.read() as session:
        hashes = list(await session.scalars(select(Operator.password_hash)))

    assert hashes
    assert all(h.startswith("$argon2id$") for h in hashes)
    assert all(PASSWORD not in h for h in hashes)


async def test_right_password_signs_in_with_an_httponly_session_cookie(db):
    console = await build_console(db)
    async with client(console) as http:
        response = await sign_in(http)
        home = await http.get("/console/conversations")

    assert response.status_code == 303
    assert response.headers["location"] == "/console"
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("frontdesk_console="))
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie
    assert "Path=/" in cookie
    assert home.status_code == 200
    async with db.read() as session:
        stored = list(await session.scalars(select(ConsoleSession)))
    token = cookie.split(";")[0].split("=", 1)[1]
    assert len(stored) == 1
    assert stored[0].id != token


async def test_wrong_password_is_refused_and_no_session_starts(db):
    console = await build_console(db)
    async with client(console) as http:
        response = await sign_in(http, OWNER, "not the password at all")
        home = await http.get("/console/conversations")

    assert response.status_code == 401
    assert "Wrong e-mail or password." in response.text
    assert home.status_code == 303
    assert home.headers["location"] == "/console/login"


async def test_unknown_email_gets_the_same_answer_as_a_wrong_password(db):
    console = await build_console(db)
    async with client(console) as http:
        response = await sign_in(http, "nobody@demo.test", PASSWORD)

    assert response.status_code == 401
    assert "Wrong e-mail or password." in response.text


async def test_too_many_failures_block_even_the_right_password_until_the_window_passes(db):
    console = await build_console(db, console_login_max_attempts=3, console_login_window_s=300)
    async with client(console) as http:
        failures = [(await sign_in(http, OWNER, "wrong password!!")).status_code for _ in range(3)]
        blocked = await sign_in(http, OWNER, PASSWORD)
        console.clock.offset += timedelta(seconds=301)
        later = await sign_in(http, OWNER, PASSWORD)
    async with client(console) as http:
        console.clock.offset = timedelta()
        for _ in range(3):
            await sign_in(http, OWNER, "wrong password!!")
        other_email = await sign_in(http, AGENT, PASSWORD)  # the limit is per e-mail and address

    assert failures == [401, 401, 401]
    assert blocked.status_code == 429
    assert "Too many failed attempts" in blocked.text
    assert other_email.status_code == 303
    assert later.status_code == 303


async def test_session_expires_after_its_ttl(db):
    console = await build_console(db, console_session_ttl_s=600)
    async with client(console) as http:
        await sign_in(http)
        before = await http.get("/console/conversations")
        console.clock.offset += timedelta(seconds=601)
        after = await http.get("/console/conversations")

    assert before.status_code == 200
    assert after.status_code == 303
    assert after.headers["location"] == "/console/login"


async def test_sign_out_ends_the_session_on_the_server(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http)
        cookie = http.cookies.get("frontdesk_console")
        token = await csrf_of(http)
        response = await http.post("/console/logout", data={"csrf": token})
        http.cookies.set("frontdesk_console", cookie)  # a copied cookie is dead too
        after = await http.get("/console/conversations")

    assert response.status_code == 303
    assert after.status_code == 303
    async with db.read() as session:
        assert list(await session.scalars(select(ConsoleSession))) == []
        actions = list(await session.scalars(select(AuditEntry.action).order_by(AuditEntry.id)))
    assert actions[-2:] == ["signed_in", "signed_out"]
    async with db.read() as session:
        who = set(await session.scalars(select(AuditEntry.operator_id).where(AuditEntry.action.like("signed_%"))))
    assert len(who) == 1
    assert None not in who  # the operator, not "command line"


async def test_deactivated_operator_loses_their_session_at_once(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http)
        async with db.transaction() as session:
            operator = await session.scalar(select(Operator).where(Operator.email == OWNER))
            assert operator is not None
            operator.active = False
        response = await http.get("/console/conversations")

    assert response.status_code == 303


async def test_agent_cannot_change_the_policy(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http, AGENT)
        token = await csrf_of(http, "/console/policy")
        page = await http.get("/console/policy")
        response = await http.post(
            "/console/policy", data={"csrf": token, "tone": "rude", "timezone": "UTC", "operator_language": "en"}
        )

    assert "Only an owner can change these fields." in page.text
    assert response.status_code == 403


async def test_secure_cookie_uses_the_host_prefix_when_the_console_is_served_over_https(db):
    console = await build_console(db, public_url="https://desk.example.com")
    async with client(console) as http:
        form = await http.get("/console/login")

    pre = next(c for c in form.headers.get_list("set-cookie") if c.startswith("frontdesk_console_login="))
    assert "Secure" in pre
    assert console.deps.config.secure_cookies


async def test_signing_in_clears_expired_sessions(db):
    console = await build_console(db, console_session_ttl_s=600)
    async with client(console) as http:
        await sign_in(http)
    console.clock.offset += timedelta(seconds=601)
    async with client(console) as http:
        await sign_in(http)

    async with db.read() as session:
        remaining = list(await session.scalars(select(ConsoleSession)))
    assert len(remaining) == 1
    assert remaining[0].expires_at > console.clock.now()
