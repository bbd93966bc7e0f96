"""Where the configure pages find the runtime's pieces: the deps first, else
``request.app.state.runtime`` (the vault, the settings, the media store)."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.platform.media import MediaStore
from frontdesk.platform.vault import MasterKeys, Vault
from frontdesk.settings import Settings


def _runtime(request: Request) -> Any:
    return getattr(request.app.state, "runtime", None)


def accounts_directory(request: Request) -> Any:
    return getattr(getattr(_runtime(request), "channel_deps", None), "accounts", None)


def vault_of(deps: ConsoleDeps, request: Request) -> Vault:
    """The runtime's vault: from the deps, else the runtime's ``AccountDirectory``; else a vault
    without a key (read-only: channel secrets then go to the plaintext column)."""
    if deps.vault is not None:
        return deps.vault
    found = getattr(accounts_directory(request), "vault", None)
    return found if isinstance(found, Vault) else Vault(deps.db, MasterKeys())


def settings_of(deps: ConsoleDeps, request: Request) -> Settings | None:
    if deps.settings is not None:
        return deps.settings
    found = getattr(_runtime(request), "settings", None)
    return found if isinstance(found, Settings) else None


def media_of(deps: ConsoleDeps, request: Request) -> MediaStore | None:
    if deps.media is not None:
        return deps.media
    found = getattr(getattr(_runtime(request), "channel_deps", None), "media", None)
    return found if found is not None else None
