"""Alembic environment. Always run through ``frontdesk.platform.store.migrate``, which hands us
an open connection (so migrations work from inside a running event loop)."""

from __future__ import annotations

from alembic import context

from frontdesk.platform.store.schema import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `frontdesk db upgrade`, not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
