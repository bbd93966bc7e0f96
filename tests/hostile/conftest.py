"""The hostile suite also attacks the console, with the console suite's own kit (``console_kit``)."""

from __future__ import annotations

import sys
from pathlib import Path

CONSOLE_TESTS = str(Path(__file__).parents[1] / "console")
if CONSOLE_TESTS not in sys.path:
    sys.path.append(CONSOLE_TESTS)
