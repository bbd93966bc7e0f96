"""Accent folding shared by every index we search: the catalog's (``capabilities.search``) and
the console's threads (``platform.store.thread_index``)."""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Lower-case without accents, so "tarjetas de presentacion" finds "presentación" and "chu
    nhat" finds "Chủ nhật" ("đ" is a letter of its own in Unicode, not a "d" with a mark)."""
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("đ", "d"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))
