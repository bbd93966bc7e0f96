"""A photo shown as another photo of the same item.

Item names tell a flyer from a business card (the closed world's photo rule), not one business
card photo from another: "matte cards with rounded corners" over the photo of glossy cards in a
fan, "bánh kem dâu 16 cm" over the 20 cm chocolate cake. Each fetched photo's own caption is
reduced to the words no other fetched photo of its item has. A caption that names another photo's
words is refused; so is the sentence before a group without a caption when it names another
photo's words and none of the shown photos'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from frontdesk.capabilities.tools import ToolEvidence
from frontdesk.verification import facts
from frontdesk.verification.facts import fold

# Words that describe any photo: never what tells two photos apart.
_COMMON = facts.STOP_WORDS | {
    fold(word) for word in ("at", "sobre", "với", "trên", "ảnh", "hình", "photo", "photos", "picture", "foto", "fotos")
}


class PhotoCaptions:
    """Every fetched photo's caption words, grouped by the item it was fetched for."""

    def __init__(self, evidence: Iterable[ToolEvidence]) -> None:
        self.item_of: dict[str, str] = {}
        self.words: dict[str, frozenset[str]] = {}
        for e in evidence:
            if len(e.references) != 1:
                continue
            (item,) = e.references
            for url, caption in e.captions.items():
                key = facts.link_key(url)
                self.item_of[key] = item
                self.words[key] = frozenset(fold(caption).split()) - _COMMON

    def own_words(self, key: str) -> frozenset[str]:
        item = self.item_of[key]
        siblings = [w for k, w in self.words.items() if k != key and self.item_of[k] == item]
        return self.words[key] - frozenset().union(*siblings)


def photo_caption_failures(groups: Sequence[tuple[Sequence[str], str, str]], captions: PhotoCaptions) -> list[str]:
    """The reason for each image group described as another photo of its item."""
    reasons = []
    for urls, caption, before in groups:
        shown = [k for k in map(facts.link_key, urls) if k in captions.words]
        if not shown:
            continue
        said_text = caption or (facts.sentences(before)[-1] if before.strip() else "")
        said = frozenset(fold(said_text).split())
        # A caption is about the photos under it: any word of another photo is wrong there ("bánh
        # kem dâu 20 cm" over the 20 cm chocolate cake). The sentence before may also talk about
        # the range ("our 16 and 20 cm cakes:"): wrong only when none of its words fit.
        if not said or (not caption and any(captions.own_words(k) & said for k in shown)):
            continue
        others = _named_others(said, shown, captions)
        if others:
            reasons.append(
                f"{said_text.strip()!r} describes another photo ({'; '.join(sorted(others.values()))}), "
                f"not the one shown; show the photo that matches its words"
            )
    return reasons


def _named_others(said: frozenset[str], shown: list[str], captions: PhotoCaptions) -> Mapping[str, str]:
    items = {captions.item_of[k] for k in shown}
    return {
        key: " ".join(sorted(captions.own_words(key) & said))
        for key, item in captions.item_of.items()
        if item in items and key not in shown and captions.own_words(key) & said
    }
