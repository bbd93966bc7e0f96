"""Tables of the vault feature (kept beside ``schema.py`` so that feature's owner edits one file)."""

from __future__ import annotations

from frontdesk.platform.store.schema import Base  # noqa: F401  (the tables below register on it)
