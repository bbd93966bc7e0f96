"""The ``frontdesk`` command as a user runs it: the installed console script, in a subprocess, on a
fresh SQLite file, with the offline demo model."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from frontdesk.platform.store.migrate import alembic_config

FRONTDESK = shutil.which("frontdesk", path=str(Path(sys.executable).parent)) or shutil.which("frontdesk")
STOPPED_BY_SIGTERM = (0,)  # the server handles SIGTERM, shuts down gracefully and exits cleanly
GREETING = "Hello! I'm frontdesk's offline demo model: my replies are scripted, not written by an AI."
TABLES = {"tenants", "channel_accounts", "contacts", "conversations", "messages", "receipts", "turn_traces", "jobs"}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    return {
        **clean,
        "FRONTDESK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'x.db'}",
        "FRONTDESK_DEMO_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'demo.db'}",
        "FRONTDESK_CONFIG": "/nonexistent/frontdesk.toml",
        "FRONTDESK_DEMO_LOCAL_MODEL": "false",  # the scripted demo: these tests are about the CLI, not a model
        "PYTHONUNBUFFERED": "1",
    }


def frontdesk(
    *args: str, env: dict[str, str], cwd: Path, stdin: str = "", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    assert FRONTDESK, "the frontdesk console script is not installed next to this Python"
    return subprocess.run(
        [FRONTDESK, *args], input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout, check=False
    )


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def error_lines(stderr: str) -> list[str]:
    """The user-facing error: from the line starting with ``error:`` to the end."""
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(starts) == 1, stderr
    return [line for line in lines[starts[0] :] if line.strip()]


class Server:
    """A long-running ``frontdesk`` subprocess whose output goes to a file (a pipe could fill up)."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        assert FRONTDESK
        self.log = cwd / "server.log"
        self._out = self.log.open("w")
        self.proc = subprocess.Popen([FRONTDESK, *args], stdout=self._out, stderr=subprocess.STDOUT, env=env, cwd=cwd)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def get(self, url: str, timeout_s: float = 20.0) -> tuple[int, str]:
        """Poll until the server answers (any status), or fail showing its output."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read().decode()
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        pytest.fail(f"no answer from {url} within {timeout_s}s:\n{self.output()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._out.close()
        return self.proc.returncode


# -- db upgrade ------------------------------------------------------------------------------------


def test_db_upgrade_creates_the_tables_and_prints_the_revision(env, tmp_path):
    result = frontdesk("db", "upgrade", env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"database at revision {head_revision()}"
    assert tables(tmp_path / "x.db") >= TABLES

    again = frontdesk("db", "upgrade", env=env, cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, result.stdout)


# -- serve -----------------------------------------------------------------------------------------


def test_serve_on_a_database_without_schema_tells_the_user_to_run_db_upgrade(env, tmp_path):
    result = frontdesk("serve", "--port", str(free_port()), env=env, cwd=tmp_path)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    assert error_lines(result.stderr) == ["error: the database has no schema: run `frontdesk db upgrade` first"]


def test_serve_on_an_upgraded_database_answers_health_checks(env, tmp_path):
    assert frontdesk("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
    port = free_port()
    server = Server(["serve", "--port", str(port)], env, tmp_path)
    try:
        status, body = server.get(f"http://127.0.0.1:{port}/healthz")
    finally:
        code = server.stop()

    assert (status, body) == (200, '{"status":"ok"}'), server.output()
    assert code in STOPPED_BY_SIGTERM, server.output()
    assert "Application shutdown complete" in server.output()


def test_serve_keeps_an_idle_connection_open_longer_than_a_load_balancers_idle_timeout(env, tmp_path):
    # A load balancer or a platform reuses connections it thinks are open; uvicorn's default 5 s
    # closed them under it, and the reused request got no answer (bench/reliability/storm.py).
    assert frontdesk("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
    port = free_port()
    server = Server(["serve", "--port", str(port)], env, tmp_path)
    try:
        server.get(f"http://127.0.0.1:{port}/healthz")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        statuses = []
        for pause_s in (6, 0):  # idle past uvicorn's own 5 s, then ask again on the same connection
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
            time.sleep(pause_s)
        connection.close()
    finally:
        server.stop()

    assert statuses == [200, 200], server.output()


# -- chat ------------------------------------------------------------------------------------------


def test_chat_answers_a_message_from_stdin_with_the_demo_model_and_exits_at_eof(env, tmp_path):
    env["FRONTDESK_QUIET_WINDOW_S"] = "0.1"

    result = frontdesk("chat", stdin="hello\n", env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "Offline demo model" in result.stdout
    assert f"agent> {GREETING}" in result.stdout
    assert "agent> To plug in a real model, set FRONTDESK_MODEL_CHAT" in result.stdout
    assert result.stdout.count("agent> ") == 3  # one reply (three blocks), nothing repeated


def test_chat_reply_lines_start_with_agent_when_stdin_is_piped(env, tmp_path):
    env["FRONTDESK_QUIET_WINDOW_S"] = "0.1"

    result = frontdesk("chat", stdin="hello\n", env=env, cwd=tmp_path)

    assert f"agent> {GREETING}" in result.stdout.splitlines()


def test_chat_keeps_the_conversation_across_messages(env, tmp_path):
    env["FRONTDESK_QUIET_WINDOW_S"] = "0.1"

    result = frontdesk("chat", stdin="hello\n\nthank you\n", env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert f"agent> {GREETING}" in result.stdout
    assert "agent> You're welcome!" in result.stdout
    with sqlite3.connect(tmp_path / "demo.db") as conn:
        roles = [r for (r,) in conn.execute("SELECT role FROM messages ORDER BY id")]
        conversations = conn.execute("SELECT count(*) FROM conversations").fetchone()[0]
    assert (roles, conversations) == (["user", "assistant", "user", "assistant"], 1)


def test_chat_after_a_hand_off_says_a_person_has_the_conversation_instead_of_waiting(env, tmp_path):
    env["FRONTDESK_QUIET_WINDOW_S"] = "0.1"

    started = time.monotonic()
    result = frontdesk("chat", stdin="can I talk to a person?\nhello?\n", env=env, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert "agent> Of course. I've asked a person" in result.stdout
    assert result.stdout.rstrip().endswith("your message is saved for them)")
    assert time.monotonic() - started < 30  # not the 70 s wait for a reply that cannot come
    with sqlite3.connect(tmp_path / "demo.db") as conn:
        ai_enabled = conn.execute("SELECT ai_enabled FROM conversations").fetchone()[0]
        kinds = [k for (k,) in conn.execute("SELECT kind FROM tasks")]
    assert (ai_enabled, kinds) == (0, ["handoff"])


# -- demo ------------------------------------------------------------------------------------------


def test_demo_serves_the_web_chat_and_prints_its_url(env, tmp_path):
    port = free_port()
    server = Server(["demo", "--port", str(port)], env, tmp_path)
    try:
        status, page = server.get(f"http://127.0.0.1:{port}/webchat/demo-webchat")
    finally:
        code = server.stop()

    output = server.output()
    assert status == 200, output
    assert "<html" in page.lower()
    assert f"Chat with the demo business: http://127.0.0.1:{port}/webchat/demo-webchat" in output
    assert "Traceback" not in output
    assert code in STOPPED_BY_SIGTERM, output
    assert "Application shutdown complete" in output
    # The demo lives in its own database: the business database was never touched.
    assert "tenants" in tables(tmp_path / "demo.db")
    assert not (tmp_path / "x.db").exists()


def test_ctrl_c_stops_the_demo_without_a_traceback(env, tmp_path):
    port = free_port()
    server = Server(["demo", "--port", str(port)], env, tmp_path)
    try:
        server.get(f"http://127.0.0.1:{port}/healthz")
    finally:
        code = server.stop(signal.SIGINT)

    output = server.output()
    assert "Application shutdown complete" in output
    assert code in (0, 130, -signal.SIGINT), output
    assert "Traceback" not in output, output


# -- bad settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["serve"], ["db", "upgrade"]], ids=["serve", "db-upgrade"])
def test_invalid_setting_exits_with_code_2_naming_the_setting_without_a_traceback(env, tmp_path, command):
    env["FRONTDESK_PORT"] = "notanumber"

    result = frontdesk(*command, env=env, cwd=tmp_path, timeout=30)

    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert error_lines(result.stderr)[0].startswith("error: invalid settings")
    assert "FRONTDESK_PORT" in result.stderr


def test_invalid_setting_error_is_one_line(env, tmp_path):
    env["FRONTDESK_PORT"] = "notanumber"

    result = frontdesk("serve", env=env, cwd=tmp_path, timeout=30)

    (line,) = error_lines(result.stderr)
    assert "FRONTDESK_PORT" in line


def test_unsupported_database_url_is_a_one_line_error(env, tmp_path):
    env["FRONTDESK_DATABASE_URL"] = "mysql://u@localhost/frontdesk"

    result = frontdesk("db", "upgrade", env=env, cwd=tmp_path, timeout=30)

    assert result.returncode == 2
    assert error_lines(result.stderr) == ["error: unsupported database 'mysql': use SQLite or PostgreSQL"], (
        result.stderr
    )


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


@pytest.fixture
def shop(env, tmp_path) -> str:
    """A migrated business database with one tenant, made with the documented commands."""
    assert frontdesk("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
    added = frontdesk("tenants", "add", "shop", "--name", "The Shop", env=env, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    return "shop"


def test_accounts_add_prints_the_webhook_url_and_secret_names_never_their_values(env, tmp_path, shop):
    env = {**env, "FRONTDESK_PUBLIC_URL": "https://shop.example"}
    added = frontdesk(
        "accounts", "add", "telegram", "--id", "tg-shop-0001", "--tenant", shop, "--config", "bot_id=42",
        "--secret", "bot_token=42:VERY-SECRET", "--secret", "webhook_secret=hush-hush",
        env=env, cwd=tmp_path,
    )  # fmt: skip

    assert added.returncode == 0, added.stderr
    assert "URL: https://shop.example/webhooks/telegram/tg-shop-0001" in added.stdout
    assert "secrets set: bot_token, webhook_secret" in added.stdout
    assert "VERY-SECRET" not in added.stdout + added.stderr
    assert "hush-hush" not in added.stdout + added.stderr
    # Nothing of the demo came with it: one tenant, one account, no web chat open to the world.
    with sqlite3.connect(tmp_path / "x.db") as conn:
        assert [t for (t,) in conn.execute("SELECT id FROM tenants")] == ["shop"]
        assert [a for (a,) in conn.execute("SELECT id FROM channel_accounts")] == ["tg-shop-0001"]


def test_accounts_add_on_a_database_without_schema_says_to_run_db_upgrade(env, tmp_path):
    result = frontdesk("accounts", "add", "webchat", "--id", "shop-chat-01", "--tenant", "shop", env=env, cwd=tmp_path)

    assert result.returncode == 2
    assert error_lines(result.stderr) == ["error: the database has no schema: run `frontdesk db upgrade` first"]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["fax", "--id", "fax-00001", "--tenant", "shop"], "unknown channel 'fax'"),
        (["telegram", "--id", "bad id!", "--tenant", "shop"], "account id 'bad id!'"),
        (["line", "--id", "line-00001", "--tenant", "shop", "--secret", "token"], "must look like key=value"),
        (["line", "--id", "line-00001", "--tenant", "nobody"], "no tenant 'nobody'"),
        (["whatsapp", "--id", "wa-shop-0001", "--tenant", "shop"], "give it --config phone_number_id=<id>"),
        (
            ["messenger", "--id", "fb-00001", "--tenant", "shop", "--config", "page_id=shop"],
            "not a numeric id ('shop')",
        ),
    ],
)
def test_accounts_add_refuses_bad_input_in_one_line(env, tmp_path, shop, args, problem):
    result = frontdesk("accounts", "add", *args, env=env, cwd=tmp_path)

    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert problem in line


def test_replaying_a_receipt_that_does_not_exist_is_a_one_line_error(env, tmp_path):
    assert frontdesk("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
    result = frontdesk("receipts", "replay", "999", env=env, cwd=tmp_path)

    assert result.returncode == 1
    assert error_lines(result.stderr) == ["error: no receipt 999"]


def test_tenants_add_refuses_a_bad_value_with_exit_code_2_in_one_line(env, tmp_path):
    assert frontdesk("db", "upgrade", env=env, cwd=tmp_path).returncode == 0
    result = frontdesk("tenants", "add", "hoa-mai", "--name", "Hoa Mai", "--timezone", "Saigon", env=env, cwd=tmp_path)

    assert result.returncode == 2
    (line,) = error_lines(result.stderr)
    assert line.startswith("error: time zone 'Saigon' is not an IANA time zone")
