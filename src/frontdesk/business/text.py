"""Text a business writes in each of its languages, and the language codes themselves.

A ``LocalText`` maps a two-letter language code to the business's own words in that language
(``{"en": "Business cards", "es": "Tarjetas de presentación"}``). Which languages a tenant speaks
is the tenant's (``tenants.languages``, the first is its default); every text must be written at
least in the default one, and may not name a language the tenant does not speak (a typo such as
``"sp"`` would otherwise vanish silently).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Annotated

from pydantic import AfterValidator, Field

LANGUAGE_CODE = re.compile(r"[a-z]{2}")


def _language_code(value: str) -> str:
    if not LANGUAGE_CODE.fullmatch(value):
        raise ValueError(f"{value!r} is not a two-letter language code (en, es, vi...)")
    return value


LanguageCode = Annotated[str, AfterValidator(_language_code)]


def _clean_texts(value: dict[str, str]) -> dict[str, str]:
    cleaned: dict[str, str] = {}
    for language, text in value.items():
        _language_code(language)
        if "\x00" in text:
            raise ValueError("text must not contain NUL characters")
        if text.strip():
            cleaned[language] = text.strip()
    return cleaned


# Short text: names, captions, units. Long text: descriptions.
ShortText = Annotated[dict[str, Annotated[str, Field(max_length=200)]], AfterValidator(_clean_texts)]
LongText = Annotated[dict[str, Annotated[str, Field(max_length=2000)]], AfterValidator(_clean_texts)]
MessageText = Annotated[dict[str, Annotated[str, Field(max_length=500)]], AfterValidator(_clean_texts)]


def pick(text: Mapping[str, str], language: str, default: str) -> str:
    """``text`` in ``language``, else in the default language, else in any language it has."""
    return text.get(language) or text.get(default) or next(iter(text.values()), "")


def language_problems(where: str, text: Mapping[str, object], languages: Iterable[str]) -> list[str]:
    """What is wrong with the languages of one text, for a tenant that speaks ``languages``."""
    spoken = list(languages)
    foreign = sorted(set(text) - set(spoken))
    if foreign:
        return [f"{where}: written in {', '.join(foreign)}, which this business does not speak ({', '.join(spoken)})"]
    return []


def parse_languages(value: str | Iterable[str]) -> list[str]:
    """``"en,vi"`` or ``["en", "vi"]`` as a list of distinct codes, default first."""
    items = [v.strip() for v in (value.split(",") if isinstance(value, str) else value)]
    languages = [v for v in items if v]
    if not languages:
        raise ValueError("give at least one language code (en, es, vi...)")
    for language in languages:
        _language_code(language)
    if len(set(languages)) != len(languages):
        raise ValueError(f"a language is listed twice: {', '.join(languages)}")
    return languages
