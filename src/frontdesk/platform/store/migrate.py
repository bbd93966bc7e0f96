"""Apply Alembic migrations programmatically (``frontdesk db upgrade``, demo start, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection

from frontdesk.platform.store.engine import Database

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


async def upgrade(db: Database, revision: str = "head") -> None:
    def run(connection: Connection) -> None:
        command.upgrade(alembic_config(connection), revision)

    async with db.engine.begin() as connection:
        await connection.run_sync(run)


async def current_revision(db: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    def read(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with db.engine.connect() as connection:
        return await connection.run_sync(read)
