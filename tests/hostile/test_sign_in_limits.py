"""Password guessing against the console, as an attacker would try it: many guesses at once, one
address trying many operators, a stranger trying to lock an operator out, and a client claiming
another address through a forwarded header."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx2
import pytest
from console_kit import AGENT, CSRF, OWNER, PASSWORD, Console, build_console, served, sign_in

from frontdesk.cli import server_config
from frontdesk.humans.console import auth
from frontdesk.settings import Settings

WRONG = "not the password, a guess"


@pytest.fixture
def password_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every password the console verified (argon2 still runs: this only counts)."""
    checked: list[str] = []
    lock = threading.Lock()  # verification runs in worker threads
    real = auth.password_matches

    def counting(stored_hash: str | None, password: str) -> bool:
        with lock:
            checked.append(password)
        return real(stored_hash, password)

    monkeypatch.setattr(auth, "password_matches", counting)
    return checked


@asynccontextmanager
async def browser(console: Console, address: str = "203.0.113.7") -> AsyncIterator[httpx2.AsyncClient]:
    """A browser at ``address`` (the in-process transport's peer address)."""
    transport = httpx2.ASGITransport(app=console.app, raise_app_exceptions=False, client=(address, 51000))
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


def signed_out(http: httpx2.AsyncClient) -> None:
    """The browser without its console session (its device cookie kept)."""
    http.cookies.delete("frontdesk_console")


async def guesses_at_once(http: httpx2.AsyncClient, count: int, email: str = OWNER) -> list[int]:
    form = await http.get("/console/login")
    token = CSRF.search(form.text)
    assert token, form.text
    data = {"csrf": token[1], "email": email, "password": WRONG}
    answers = await asyncio.gather(*(http.post("/console/login", data=data) for _ in range(count)))
    return [a.status_code for a in answers]


async def test_parallel_guesses_get_exactly_the_limit_of_password_checks(db, password_checks):
    console = await build_console(db, console_login_max_attempts=5)
    async with browser(console, "198.51.100.1") as operator:
        assert (await sign_in(operator)).status_code == 303  # a browser the operator uses
        device = {name: value for name, value in operator.cookies.items() if "device" in name}
    password_checks.clear()

    async with browser(console) as attacker:
        statuses = await guesses_at_once(attacker, 150)
        right_password_from_the_attacker = await sign_in(attacker, OWNER, PASSWORD)
    async with browser(console, "198.51.100.1") as operator:
        operator.cookies.update(device)
        from_the_known_browser = await sign_in(operator)

    assert len([p for p in password_checks if p == WRONG]) == 5
    assert sorted(statuses) == [401] * 5 + [429] * 145
    assert right_password_from_the_attacker.status_code == 429
    assert from_the_known_browser.status_code == 303


async def test_a_strangers_failures_never_lock_the_operator_out_of_their_known_browser(db):
    console = await build_console(db, console_login_max_attempts=3)
    async with browser(console, "198.51.100.1") as operator:
        await sign_in(operator)
        device = {name: value for name, value in operator.cookies.items() if "device" in name}
    async with browser(console, "198.51.100.1") as stranger:  # same office, same address
        tries = [(await sign_in(stranger, OWNER, WRONG)).status_code for _ in range(6)]
        stranger_with_the_password = await sign_in(stranger, OWNER, PASSWORD)
    async with browser(console, "198.51.100.1") as operator:
        operator.cookies.update(device)
        own_typo = await sign_in(operator, OWNER, WRONG)
        own_sign_in = await sign_in(operator)

    assert tries == [401, 401, 401, 429, 429, 429]
    assert stranger_with_the_password.status_code == 429  # from an unknown browser the account is held
    assert own_typo.status_code == 401
    assert own_sign_in.status_code == 303


async def test_guesses_from_the_known_browser_are_limited_too(db):
    console = await build_console(db, console_login_max_attempts=3)
    async with browser(console) as stolen:
        await sign_in(stolen)
        signed_out(stolen)  # a copy of the device cookie alone
        tries = [(await sign_in(stolen, OWNER, WRONG)).status_code for _ in range(4)]

    assert tries == [401, 401, 401, 429]


async def test_a_success_gives_its_attempt_back(db):
    console = await build_console(db, console_login_max_attempts=2)
    async with browser(console) as http:
        statuses = []
        for _ in range(4):
            statuses.append((await sign_in(http)).status_code)
            signed_out(http)

    assert statuses == [303] * 4


async def test_one_address_guessing_many_operators_is_held_and_others_are_not(db):
    console = await build_console(db, console_login_max_attempts=5, console_login_max_attempts_per_ip=3)
    async with browser(console) as sprayer:
        tries = [(await sign_in(sprayer, email, WRONG)).status_code for email in (OWNER, AGENT, "x@demo.test")]
        fourth_account = await sign_in(sprayer, "y@demo.test", WRONG)
    async with browser(console, "192.0.2.44") as elsewhere:
        agent = await sign_in(elsewhere, AGENT, PASSWORD)

    assert tries == [401, 401, 401]
    assert fourth_account.status_code == 429
    assert agent.status_code == 303


async def test_the_window_reopens_the_account(db):
    console = await build_console(db, console_login_max_attempts=2, console_login_window_s=300)
    async with browser(console) as http:
        for _ in range(2):
            await sign_in(http, OWNER, WRONG)
        held = await sign_in(http)
        console.clock.offset += timedelta(seconds=301)
        later = await sign_in(http)

    assert held.status_code == 429
    assert later.status_code == 303


# -- forwarded headers, over real HTTP through the server configuration ``serve`` uses


async def _from(base: str, forwarded_for: str, email: str) -> int:
    async with httpx2.AsyncClient(base_url=base, headers={"X-Forwarded-For": forwarded_for}) as http:
        return (await sign_in(http, email, WRONG)).status_code


@pytest.mark.parametrize(
    ("proxies", "second_client"),
    [(["127.0.0.1"], 401), ([], 429)],
    ids=["behind-a-trusted-proxy", "header-from-anyone"],
)
async def test_forwarded_for_is_believed_only_from_the_configured_proxies(db, proxies, second_client):
    console = await build_console(db, console_login_max_attempts_per_ip=2)
    settings = Settings(host="127.0.0.1", port=0, log_level="WARNING", forwarded_allow_ips=proxies)
    async with served(console, server_config(console.app, settings)) as base:
        first = [await _from(base, "203.0.113.1", email) for email in (OWNER, AGENT, "z@demo.test")]
        second = await _from(base, "203.0.113.2", OWNER)

    assert first == [401, 401, 429]
    assert second == second_client
