"""The browser tests' Chromium: Debian's (Playwright never downloads one) and its flags. On a
laptop without Chromium those tests are skipped; CI sets FRONTDESK_CI so that a missing browser
fails the run instead of silently skipping the flows they exist to prove."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("FRONTDESK_CI"),
    reason="needs Debian's chromium at /usr/bin/chromium",
)
