"""Where the configure pages find the runtime's pieces: the deps first, else
``request.app.state.runtime`` (the vault, the settings, each pack's media directory)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi import Request

from frontdesk.humans.console._deps import ConsoleDeps
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


def media_dir_of(deps: ConsoleDeps, request: Request, pack: str) -> Path | None:
    if pack in deps.media_dirs:
        return deps.media_dirs[pack]
    packs = getattr(_runtime(request), "packs", None)
    found = getattr(packs.get(pack), "media_dir", None) if isinstance(packs, Mapping) else None
    return found if isinstance(found, Path) else None
