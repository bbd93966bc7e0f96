"""``frontdesk tenants``, ``catalog`` and ``profile`` as an owner uses them: from nothing to a second
business with its own data, every bad value refused in one line and nothing written.
(In process for speed; ``tests/test_cli.py`` checks the installed command's exit code 2.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from frontdesk.business import BusinessStore
from frontdesk.cli import app
from frontdesk.demo import DEMO_BUSINESS_FILE
from frontdesk.errors import ConfigError
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Tenant

CATALOG = """\
items:
  - id: pho-bo
    name: {vi: Phở bò, en: Beef pho}
    price: {currency: VND, unit: {vi: tô, en: bowl}, amount: 65000}
"""


@pytest.fixture
def cli(db: Database, database_url: str, tmp_path: Path):
    """Run ``frontdesk ...`` on the test database; returns (exit code, output, the ConfigError if any)."""
    env = {"FRONTDESK_DATABASE_URL": database_url, "FRONTDESK_MEDIA_DIR": str(tmp_path / "media")}

    def invoke(*args: str) -> tuple[int, str, ConfigError | None]:
        result = CliRunner().invoke(app, list(args), env=env)
        error = result.exception if isinstance(result.exception, ConfigError) else None
        if result.exception is not None and error is None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.output, error

    async def run(*args: str) -> tuple[int, str, ConfigError | None]:
        return await asyncio.to_thread(invoke, *args)  # the command runs its own event loop

    return run


async def tenant_row(db: Database, tenant_id: str) -> Tenant | None:
    async with db.read() as session:
        return await session.get(Tenant, tenant_id)


async def test_a_tenant_is_added_shown_changed_and_listed(cli, db):
    code, out, _ = await cli("tenants", "add", "pho-24", "--name", "Phở 24", "--languages", "vi,en", "--timezone",
                       "Asia/Ho_Chi_Minh", "--operator-language", "vi")  # fmt: skip
    assert code == 0, out
    assert "languages: vi, en (default vi)" in out
    assert "time zone: Asia/Ho_Chi_Minh" in out

    code, out, _ = await cli("tenants", "set", "pho-24", "--name", "Phở 24 Nguyễn Huệ")
    assert (code, "tenant pho-24: Phở 24 Nguyễn Huệ" in out) == (0, True)
    code, out, _ = await cli("tenants", "list")
    assert out.splitlines() == ["pho-24\tPhở 24 Nguyễn Huệ\tcatalog\tvi,en\t0 items"]
    tenant = await tenant_row(db, "pho-24")
    assert tenant is not None
    assert (tenant.languages, tenant.policy) == (
        ["vi", "en"],
        {"timezone": "Asia/Ho_Chi_Minh", "operator_language": "vi"},
    )


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--name", "X", "--timezone", "Saigon"], "time zone 'Saigon' is not an IANA time zone"),
        (["--name", "X", "--languages", "vi,vietnamese"], "'vietnamese' is not a two-letter language code"),
        (["--name", "X", "--pack", "bakery"], "pack 'bakery' is not one of catalog, loyalty"),
        (["--name", " "], "name: 1 to 200 characters"),
        ([], "a new tenant needs a display name (--name)"),
    ],
)
async def test_a_bad_tenant_value_is_refused_in_one_line_and_nothing_is_created(cli, db, args, problem):
    _code, _, error = await cli("tenants", "add", "pho-24", *args)

    assert error is not None
    assert problem in error.message
    assert "\n" not in error.message
    assert await tenant_row(db, "pho-24") is None


@pytest.mark.parametrize("tenant_id", ["Pho24", "pho--24", "p", "pho_24", "pho-"])
async def test_a_tenant_id_that_could_not_be_a_url_or_variable_name_is_refused(cli, tenant_id):
    _, _, error = await cli("tenants", "add", tenant_id, "--name", "X")

    assert error is not None
    assert f"tenant id {tenant_id!r}" in error.message


async def test_an_import_dry_run_then_the_import_then_export_and_profile_edits(cli, db, tmp_path):
    await cli("tenants", "add", "pho-24", "--name", "Phở 24", "--languages", "vi,en")
    business = tmp_path / "pho.yaml"
    business.write_text(CATALOG, encoding="utf-8")

    _, dry, _ = await cli("catalog", "import", str(business), "--tenant", "pho-24", "--dry-run")
    assert dry.splitlines() == ["+ pho-bo: new item", "pho-24: would change 1 thing(s)"]
    assert (await BusinessStore(db, SystemClock()).read("pho-24")).items == ()

    code, done, _ = await cli("catalog", "import", str(business), "--tenant", "pho-24")
    assert (code, done.splitlines()[-1]) == (0, "pho-24: changed 1 thing(s)")
    _, again, _ = await cli("catalog", "import", str(business), "--tenant", "pho-24")
    assert again.splitlines() == ["pho-24: nothing to change"]

    code, out, _ = await cli("profile", "set", "--tenant", "pho-24", "--phone", "+84 28 3822 1234",
                       "--hours", "mon=06:00-22:00", "--hours", "sun=closed", "--closed", "2027-02-06")  # fmt: skip
    assert (code, out.strip()) == (0, "pho-24: profile saved")
    _, shown, _ = await cli("profile", "show", "--tenant", "pho-24")
    assert "phone: '+842838221234'" in shown
    assert "mon: ['06:00-22:00']" in shown

    exported = tmp_path / "out" / "pho.json"
    exported.parent.mkdir()
    code, out, _ = await cli("catalog", "export", str(exported), "--tenant", "pho-24")
    assert (code, out.strip()) == (0, f"pho-24: wrote 1 item(s) to {exported}")
    _, round_trip, _ = await cli("catalog", "import", str(exported), "--tenant", "pho-24", "--dry-run")
    assert round_trip.splitlines() == ["pho-24: nothing to change"]


async def test_a_bad_business_file_is_refused_naming_each_line_and_nothing_is_written(cli, db, tmp_path):
    await cli("tenants", "add", "pho-24", "--name", "Phở 24", "--languages", "vi,en")
    business = tmp_path / "pho.yaml"
    business.write_text(CATALOG.replace("65000", "-5") + "  - {id: Bun, name: {vi: Bún}, price: on_request}\n")

    _, _, error = await cli("catalog", "import", str(business), "--tenant", "pho-24")

    assert error is not None
    assert error.message.splitlines() == [
        "2 problem(s), nothing was imported:",
        "line 2, item 'pho-bo': price.tiers.0.amount: Input should be greater than or equal to 0",
        "line 5, item 'Bun': id: String should match pattern '^[a-z0-9]+(?:-[a-z0-9]+)*$'",
    ]
    assert (await BusinessStore(db, SystemClock()).read("pho-24")).items == ()


async def test_import_needs_an_existing_tenant_and_a_known_file_kind(cli, tmp_path):
    _, _, no_tenant = await cli("catalog", "import", str(DEMO_BUSINESS_FILE), "--tenant", "nobody")
    (tmp_path / "shop.xlsx").write_bytes(b"PK")
    await cli("tenants", "add", "shop", "--name", "Shop")
    _, _, wrong_kind = await cli("catalog", "import", str(tmp_path / "shop.xlsx"), "--tenant", "shop")

    assert no_tenant is not None
    assert no_tenant.message == "no tenant 'nobody'"
    assert wrong_kind is not None
    assert wrong_kind.message == "shop.xlsx: a business file ends in .yaml, .yml, .json or .csv"
