"""The message catalogs: the same keys in every language, every key a template uses exists,
and a page renders in the operator's language."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from console_kit import build_console, client, sign_in
from sqlalchemy import select

from frontdesk.humans.console.i18n import LANGUAGES, catalog, from_accept_language, translator
from frontdesk.platform.store.schema_console import Operator

TEMPLATES = resources.files("frontdesk.humans.console").joinpath("templates")
LITERAL_KEY = re.compile(r"""(?<![\w.])t\("([a-z_.]+)"[,)]""")


def test_every_language_has_the_same_keys():
    english = set(catalog("en"))
    for language in LANGUAGES:
        assert set(catalog(language)) == english, language
        assert all(value.strip() for value in catalog(language).values()), language


def test_every_literal_key_in_the_templates_is_in_the_catalog():
    used = {key for f in TEMPLATES.iterdir() if f.name.endswith(".html") for key in LITERAL_KEY.findall(f.read_text())}
    assert used
    assert used <= set(catalog("en")), sorted(used - set(catalog("en")))


def test_missing_key_falls_back_to_english_then_to_the_key():
    assert translator("vi")("nav.tasks") == "Công việc"
    assert translator("xx")("nav.tasks") == "Tasks"
    assert translator("es")("no.such.key") == "no.such.key"
    assert translator("es")("receipt.replays", n=2) == "2 reenvío(s)"


@pytest.mark.parametrize(("header", "language"), [("vi-VN,vi;q=0.9", "vi"), ("es", "es"), ("de, fr", "en"), ("", "en")])
def test_sign_in_page_language_follows_the_browser(header, language):
    assert from_accept_language(header) == language


@pytest.mark.parametrize(("language", "heading"), [("es", "Conversaciones"), ("vi", "Hội thoại")])
async def test_console_speaks_the_operators_language(db, language, heading):
    console = await build_console(db)
    async with db.transaction() as session:
        operator = await session.scalar(select(Operator).where(Operator.email == "owner@demo.test"))
        assert operator is not None
        operator.language = language
    async with client(console) as http:
        await sign_in(http)
        page = await http.get("/console/conversations")

    assert f"<h1>{heading}</h1>" in page.text
    assert f'<html lang="{language}">' in page.text
