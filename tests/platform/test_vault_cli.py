"""``frontdesk vault``: keygen, set/names/delete without echoing values, rotate with a report."""

from __future__ import annotations

import asyncio
import base64

from typer.testing import CliRunner

from frontdesk.cli_vault import vault_app
from frontdesk.errors import ConfigError

OLD = base64.b64encode(bytes(range(32))).decode()
NEW = base64.b64encode(bytes(range(50, 82))).decode()
VALUE = "cli-value-Zq81"


def vault(database_url: str, *args: str, key: str | None = OLD, stdin: str | None = None):
    env = {"FRONTDESK_DATABASE_URL": database_url, "FRONTDESK_VAULT_KEY": key}
    return CliRunner().invoke(vault_app, list(args), env=env, input=stdin)


# The tests take ``db`` so PostgreSQL starts empty, and run the CLI (which has its own event loop)
# in a thread.


def test_keygen_prints_a_fresh_32_byte_key():
    first, second = (CliRunner().invoke(vault_app, ["keygen"]).output.strip() for _ in range(2))
    assert len(base64.b64decode(first)) == 32
    assert first != second


async def test_set_names_delete_and_rotate_never_print_a_value(db, database_url):
    await asyncio.to_thread(_set_names_delete_and_rotate, database_url)


def _set_names_delete_and_rotate(database_url: str) -> None:
    no_tenant = vault(database_url, "set", "demo", "x", "--stdin", stdin="v\n")
    assert isinstance(no_tenant.exception, ConfigError)
    assert no_tenant.exception.message == "no tenant 'demo'"

    from frontdesk.cli import app

    environment = {"FRONTDESK_DATABASE_URL": database_url, "FRONTDESK_VAULT_KEY": OLD}
    tenant = CliRunner().invoke(app, ["tenants", "add", "demo", "--name", "Demo"], env=environment)
    assert tenant.exit_code == 0, tenant.output
    added = CliRunner().invoke(
        app,
        ["accounts", "add", "telegram", "--id", "tg-cli-vault1", "--tenant", "demo", "--secret", f"bot_token={VALUE}"],
        env=environment,
    )
    assert added.exit_code == 0, added.output
    assert "secrets set: bot_token" in added.output

    stored = vault(database_url, "set", "demo", "api/token", "--stdin", stdin=VALUE + "\n")
    names = vault(database_url, "names", "demo")
    assert (stored.exit_code, names.exit_code) == (0, 0)
    assert names.output.split() == ["api/token", "channel/tg-cli-vault1/bot_token"]

    # Rotation: the new key first, the old one still listed, until rotate reports it unused.
    both = f"{NEW},{OLD}"
    rotated = vault(database_url, "rotate", key=both)
    assert rotated.exit_code == 0, rotated.output
    assert "2 credential(s), 2 re-sealed, 0 already current" in rotated.output
    assert "older keys may be removed" in rotated.output
    again = vault(database_url, "rotate", key=NEW)
    assert "0 re-sealed, 2 already current" in again.output

    deleted = vault(database_url, "delete", "demo", "api/token", key=NEW)
    assert "deleted api/token" in deleted.output
    assert vault(database_url, "names", "demo", key=NEW).output.split() == ["channel/tg-cli-vault1/bot_token"]

    everything = added.output + stored.output + names.output + rotated.output + again.output + deleted.output
    assert VALUE not in everything
    assert OLD not in everything
    assert NEW not in everything


async def test_without_a_key_set_and_rotate_are_refused_with_what_to_do(db, database_url):
    await asyncio.to_thread(_refused_without_a_key, database_url)


def _refused_without_a_key(database_url: str) -> None:
    rotated = vault(database_url, "rotate", key=None)
    assert isinstance(rotated.exception, ConfigError)
    assert "needs a master key" in rotated.exception.message

    bad = vault(database_url, "names", "demo", key="not-a-key")
    assert isinstance(bad.exception, ConfigError)
    assert "not-a-key" not in bad.exception.message
