"""The credential vault: sealed at rest, bound to tenant and name, rotatable, cached, env fallback."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select, text, update

from frontdesk.demo import seed_demo
from frontdesk.errors import ConfigError
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.schema import Tenant
from frontdesk.platform.store.schema_vault import Credential
from frontdesk.platform.vault import MasterKeys, Vault, VaultError, build_vault, env_name, generate_key, key_id
from frontdesk.settings import Settings

KEY_A = base64.b64encode(bytes(range(32))).decode()
KEY_B = base64.b64encode(bytes(range(100, 132))).decode()
VALUE = "canary-7f3a-SEALED-value"


class FakeClock(SystemClock):
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


def keys(*texts: str) -> MasterKeys:
    return MasterKeys.load(",".join(texts), None)


async def tenants(db, *ids: str) -> None:
    async with db.transaction() as session:
        for tenant_id in ids:
            session.add(Tenant(id=tenant_id, name=tenant_id, created_at=datetime(2026, 1, 1, tzinfo=UTC)))


@pytest.fixture
async def vault(db):
    await tenants(db, "t1", "t2")
    return Vault(db, keys(KEY_A), environ={})


async def envelope_of(db, tenant_id: str, name: str) -> str:
    async with db.read() as session:
        return await session.scalar(
            select(Credential.envelope).where(Credential.tenant_id == tenant_id, Credential.name == name)
        )


async def set_envelope(db, tenant_id: str, name: str, envelope: str) -> None:
    async with db.transaction() as session:
        await session.execute(
            update(Credential)
            .where(Credential.tenant_id == tenant_id, Credential.name == name)
            .values(envelope=envelope)
        )


# -- round trip ------------------------------------------------------------------------------------


async def test_a_stored_credential_reads_back_lists_by_name_and_deletes(vault):
    await vault.put("t1", "channel/acct-0001/bot_token", VALUE)
    await vault.put("t1", "channel/acct-0001/webhook_secret", "s2")
    await vault.put("t2", "channel/acct-0001/bot_token", "other tenant")

    assert await vault.get("t1", "channel/acct-0001/bot_token") == VALUE
    assert await vault.get("t1", "missing") is None
    assert await vault.names("t1") == ["channel/acct-0001/bot_token", "channel/acct-0001/webhook_secret"]
    assert await vault.get_prefix("t1", "channel/acct-0001/") == {"bot_token": VALUE, "webhook_secret": "s2"}
    assert await vault.delete("t1", "channel/acct-0001/webhook_secret") is True
    assert await vault.delete("t1", "channel/acct-0001/webhook_secret") is False
    assert await vault.names("t1") == ["channel/acct-0001/bot_token"]
    assert await vault.get("t2", "channel/acct-0001/bot_token") == "other tenant"


async def test_put_replaces_the_value_and_every_envelope_uses_a_fresh_nonce(vault, db):
    await vault.put("t1", "api", VALUE)
    first = await envelope_of(db, "t1", "api")
    await vault.put("t1", "api", VALUE)

    assert await envelope_of(db, "t1", "api") != first
    assert await vault.get("t1", "api") == VALUE


async def test_a_prefix_with_like_wildcards_matches_only_itself(vault):
    await vault.put("t1", "channel/a_b/token", "mine")
    await vault.put("t1", "channel/aXb/token", "not mine")

    assert await vault.get_prefix("t1", "channel/a_b/") == {"token": "mine"}


def test_nothing_that_holds_keys_or_values_prints_them():
    master = keys(KEY_A, KEY_B)
    envelope = master.seal(VALUE, "t1", "api")

    assert KEY_A not in repr(master)
    assert KEY_B not in repr(master)
    assert repr(master) == f"MasterKeys(ids={[key_id(base64.b64decode(KEY_A)), key_id(base64.b64decode(KEY_B))]})"
    assert VALUE not in envelope
    assert KEY_A not in repr(Settings(vault_key=KEY_A))
    assert KEY_A not in repr(Vault(None, master))  # type: ignore[arg-type]  # repr needs no database


# -- tampering and wrong keys ----------------------------------------------------------------------


def flip(envelope: str, index: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(envelope + "=" * (-len(envelope) % 4)))
    raw[index] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


@pytest.mark.parametrize(
    ("index", "problem"),
    [
        (-1, "does not authenticate"),  # the tag
        (30, "does not authenticate"),  # the ciphertext
        (14, "does not authenticate"),  # the nonce
        (3, "envelope version 0"),  # the version byte
        (0, "not a vault envelope"),  # the magic
        (5, "which is not configured"),  # the key id
    ],
)
async def test_a_tampered_envelope_is_refused_with_a_clear_error(vault, db, index, problem):
    await vault.put("t1", "api", VALUE)
    await set_envelope(db, "t1", "api", flip(await envelope_of(db, "t1", "api"), index))
    vault.forget()

    with pytest.raises(VaultError, match=problem) as caught:
        await vault.get("t1", "api")
    assert VALUE not in str(caught.value)


@pytest.mark.parametrize(("tenant", "name"), [("t2", "api"), ("t1", "other")])
async def test_an_envelope_copied_to_another_tenant_or_name_does_not_decrypt(vault, db, tenant, name):
    await vault.put("t1", "api", VALUE)
    await vault.put(tenant, name, "placeholder")
    await set_envelope(db, tenant, name, await envelope_of(db, "t1", "api"))
    vault.forget()

    with pytest.raises(VaultError, match=f"credential '{name}' of tenant '{tenant}' does not authenticate"):
        await vault.get(tenant, name)


def test_tenant_and_name_are_bound_without_ambiguity():
    master = keys(KEY_A)
    with pytest.raises(VaultError):
        master.open(master.seal(VALUE, "ab", "c"), "a", "bc")


async def test_the_wrong_key_is_refused_naming_the_key_id_it_needs(vault, db):
    await vault.put("t1", "api", VALUE)
    other = Vault(db, keys(KEY_B), environ={})

    with pytest.raises(VaultError, match=f"sealed with vault key {key_id(base64.b64decode(KEY_A))}"):
        await other.get("t1", "api")


async def test_without_a_key_stored_credentials_say_so_and_writes_are_refused(vault, db):
    await vault.put("t1", "api", VALUE)
    keyless = Vault(db, MasterKeys(), environ={})

    assert not keyless.can_seal
    with pytest.raises(VaultError, match="not configured"):
        await keyless.get("t1", "api")
    with pytest.raises(ConfigError, match=r"FRONTDESK_VAULT_KEY.*FRONTDESK_SECRET__T1__API"):
        await keyless.put("t1", "api", "x")


# -- rotation --------------------------------------------------------------------------------------


async def test_rotation_reseals_everything_under_the_new_key_and_the_old_key_can_go(vault, db):
    for n in range(5):
        await vault.put("t1", f"secret-{n}", f"value-{n}")
    new_id, old_id = key_id(base64.b64decode(KEY_B)), key_id(base64.b64decode(KEY_A))

    both = Vault(db, keys(KEY_B, KEY_A), environ={})
    assert await both.get("t1", "secret-3") == "value-3"  # the old key still opens before rotation
    assert await both.key_ids_in_use() == {old_id: 5}

    report = await both.rotate(batch=2)  # several batches
    assert (report.total, report.resealed, report.already_current, report.current_key_id) == (5, 5, 0, new_id)
    assert await both.key_ids_in_use() == {new_id: 5}
    assert (await both.rotate()).resealed == 0  # re-running is harmless

    only_new = Vault(db, keys(KEY_B), environ={})
    assert [await only_new.get("t1", f"secret-{n}") for n in range(5)] == [f"value-{n}" for n in range(5)]
    with pytest.raises(VaultError):
        await Vault(db, keys(KEY_A), environ={}).get("t1", "secret-0")


async def test_rotation_needs_a_key(db):
    with pytest.raises(ConfigError, match="needs a master key"):
        await Vault(db, MasterKeys(), environ={}).rotate()


# -- cache -----------------------------------------------------------------------------------------


async def test_reads_are_cached_for_the_ttl_and_a_write_clears_the_cache_at_once(vault, db):
    clock = FakeClock()
    mine = Vault(db, keys(KEY_A), clock, cache_ttl_s=30, environ={})
    other_instance = Vault(db, keys(KEY_A), clock, cache_ttl_s=30, environ={})
    await mine.put("t1", "api", "v1")
    assert await mine.get("t1", "api") == "v1"

    await other_instance.put("t1", "api", "v2")
    assert await mine.get("t1", "api") == "v1"  # another instance's write: seen within the TTL
    clock.t += 31
    assert await mine.get("t1", "api") == "v2"

    await mine.put("t1", "api", "v3")
    assert await mine.get("t1", "api") == "v3"  # our own write: seen at once
    await mine.delete("t1", "api")
    assert await mine.get("t1", "api") is None


# -- environment fallback --------------------------------------------------------------------------


async def test_the_environment_fills_in_what_the_vault_does_not_hold(db):
    await tenants(db, "demo")
    name = "channel/tg-shop-01/bot_token"
    environ = {
        env_name("demo", name): "from-env",
        "FRONTDESK_SECRET__DEMO__CHANNEL_TG_SHOP_01_WEBHOOK_SECRET": "env-hook",
        "FRONTDESK_SECRET__OTHER__CHANNEL_TG_SHOP_01_APP_SECRET": "other tenant",
    }
    assert env_name("demo", name) == "FRONTDESK_SECRET__DEMO__CHANNEL_TG_SHOP_01_BOT_TOKEN"

    keyless = Vault(db, MasterKeys(), environ=environ)
    assert await keyless.get("demo", name) == "from-env"
    assert await keyless.get_prefix("demo", "channel/tg-shop-01/") == {
        "bot_token": "from-env",
        "webhook_secret": "env-hook",
    }

    keyed = Vault(db, keys(KEY_A), environ=environ)
    await keyed.put("demo", name, "from-vault")
    assert await keyed.get("demo", name) == "from-vault"  # stored wins
    assert await keyed.names("demo") == [name]  # the environment is not listed as stored


# -- keys from settings and files ------------------------------------------------------------------


def test_a_key_file_holds_keys_newest_first_with_comments(tmp_path: Path):
    path = tmp_path / "vault.keys"
    path.write_text(f"# rotated 2026-11-30\n{KEY_B}\n\n{KEY_A}\n")
    path.chmod(0o600)

    loaded = MasterKeys.load(None, path)

    assert loaded.ids == (key_id(base64.b64decode(KEY_B)), key_id(base64.b64decode(KEY_A)))
    assert loaded.current_id == key_id(base64.b64decode(KEY_B))


async def test_build_vault_reads_the_settings(db, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("FRONTDESK_VAULT_KEY", raising=False)  # a developer's own key must not leak in
    monkeypatch.delenv("FRONTDESK_VAULT_KEY_FILE", raising=False)
    path = tmp_path / "vault.key"
    path.write_text(KEY_A + "\n")
    from_file = build_vault(db, Settings(vault_key_file=path))
    from_env = build_vault(db, Settings(vault_key=KEY_A))
    nothing = build_vault(db, Settings())

    assert from_file.can_seal
    assert from_env.can_seal
    assert not nothing.can_seal
    await tenants(db, "t1")
    await from_file.put("t1", "api", VALUE)
    assert await from_env.get("t1", "api") == VALUE


@pytest.mark.parametrize(
    ("inline", "file_text", "problem"),
    [
        ("not-a-key", None, "FRONTDESK_VAULT_KEY: not a base64 32-byte key"),
        (base64.b64encode(b"short").decode(), None, "not a base64 32-byte key"),
        (None, "# only a comment\n", "holds no key"),
        (None, f"{KEY_A}\nbroken-line\n", "line 2: not a base64 32-byte key"),
        (KEY_A, KEY_B, "not both"),
    ],
)
def test_a_bad_key_configuration_is_refused_without_echoing_it(tmp_path: Path, inline, file_text, problem):
    path = None
    if file_text is not None:
        path = tmp_path / "vault.key"
        path.write_text(file_text)
    with pytest.raises(ConfigError, match=problem) as caught:
        MasterKeys.load(inline, path)
    assert "broken-line" not in str(caught.value)
    assert "not-a-key" not in str(caught.value)


def test_a_missing_key_file_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="cannot read"):
        MasterKeys.load(None, tmp_path / "nope.key")


def test_generated_keys_are_32_random_bytes():
    first, second = generate_key(), generate_key()
    assert len(base64.b64decode(first)) == 32
    assert first != second
    assert MasterKeys.load(first, None).configured


# -- at rest ---------------------------------------------------------------------------------------


async def test_no_plaintext_at_rest_after_put(vault, db, database_url):
    await seed_demo(db, SystemClock())
    await vault.put("t1", "api", VALUE)
    await vault.put("demo", "channel/demo-webchat/token", VALUE + "-2")

    if db.dialect == "sqlite":
        await db.dispose()  # checkpoint the WAL into the file; read every file SQLite wrote
        path = Path(database_url.split("///", 1)[1])
        stored = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    else:
        async with db.read() as session:
            tables = [
                t
                for t in (
                    await session.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
                ).scalars()
            ]
            dumps = [str((await session.execute(text(f'SELECT * FROM "{table}"'))).all()) for table in tables]
        stored = "\n".join(dumps).encode()
    assert b"canary-7f3a" not in stored
    assert b"Y2FuYXJ5" not in stored  # nor its base64
