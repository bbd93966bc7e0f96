"""Message catalogs: every string the console writes goes through ``t(key)``.

A key missing from a language falls back to English, then to the key itself (visible, never a
crash); ``tests/console/test_i18n.py`` keeps the catalogs in step."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources

LANGUAGES = ("en", "es", "vi")
DEFAULT = "en"

Translator = Callable[..., str]


@cache
def catalog(language: str) -> dict[str, str]:
    text = resources.files(__package__).joinpath("locales", f"{language}.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return {str(k): str(v) for k, v in data.items()}


def language_of(value: str | None) -> str:
    return value if value in LANGUAGES else DEFAULT


def translator(language: str | None) -> Translator:
    lang = language_of(language)
    own, fallback = catalog(lang), catalog(DEFAULT)

    def t(key: str, **values: object) -> str:
        text = own.get(key) or fallback.get(key) or key
        return text.format(**values) if values else text

    return t


def from_accept_language(header: str | None) -> str:
    """The first supported language the browser asks for (the sign-in page has no operator yet)."""
    for part in (header or "").split(","):
        code = part.split(";")[0].strip().lower()[:2]
        if code in LANGUAGES:
            return code
    return DEFAULT
