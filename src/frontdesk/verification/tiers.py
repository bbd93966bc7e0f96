"""A price said with what it buys must be that option's price.

An item's prices come as "amount / what it buys" rows: "$45 / 250 cards, $70 / 500 cards",
"250.000 ₫ / bánh 16 cm (4-6 người)", "€15 / medio día (4 horas)", "$8.50 / bag, for 25 bags".
A real model moves amounts between rows ("$70 for 250 cards", "bánh 20 cm giá 250.000đ", "medio
día: 22 €", "a box of 12 is 150,000 VND"): every amount is a real price, so the price rule cannot
see it. Here each row is reduced to the words that tell it from its siblings (250 / 500; 16 cm,
4-6 / 20 cm, 8-10; medio, 4, horas / completo), and a clause holding one amount that names
another row's words and none of its own is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from frontdesk.verification import facts
from frontdesk.verification.facts import fold
from frontdesk.verification.money import money_values, without_money

# Words every row shares or that tell nothing apart ("a box of 6": "of" is not the option).
_STOP = facts.STOP_WORDS | {fold(word) for word in ("per", "each", "cada", "mỗi", "giá")}


@dataclass(frozen=True)
class Tier:
    amount: Decimal
    own: frozenset[str]  # the words of what it buys that no sibling row has ("box of 6": 6)


@dataclass(frozen=True)
class Unproven:
    rule: str
    reason: str


def _words(text: str) -> set[str]:
    return {w for w in fold(text).split() if w not in _STOP}


def _rows(price_text: str) -> list[str]:
    """One "amount / what it buys" per row: "$45 / 250 cards, $70 / 500 cards" is two rows, and
    "$8.50 / bag, for 25 bags" one (the part after the comma holds no amount)."""
    rows: list[str] = []
    for part in re.split(r",\s+", price_text):
        if rows and not money_values(part):
            rows[-1] = f"{rows[-1]}, {part}"
        else:
            rows.append(part)
    return rows


def tiers_of(groups: Iterable[Sequence[str]]) -> list[Tier]:
    """The rows of each item's prices (one group per item), each with its distinguishing words."""
    tiers: list[Tier] = []
    for group in groups:
        rows = []
        for row in (r for text in group for r in _rows(text)):
            amount_text, slash, bought = row.partition(" / ")
            amounts = money_values(amount_text)
            if slash and amounts:
                rows.append((amounts[-1].value, _words(bought)))
        if len(rows) < 2:
            continue  # a single price: nothing to mix up
        for index, (amount, words) in enumerate(rows):
            siblings = set().union(*(w for i, (_, w) in enumerate(rows) if i != index))
            tiers.append(Tier(amount, frozenset(words - siblings)))
    return tiers


def tier_failures(text: str, groups: Iterable[Sequence[str]]) -> list[Unproven]:
    tiers = tiers_of(groups)
    if not tiers:
        return []
    failures = []
    for sentence in facts.sentences(text):
        parts = facts.clauses(sentence)
        for index, clause in enumerate(parts):
            amounts = {m.value for m in money_values(clause)}
            if len(amounts) != 1:
                continue
            (value,) = amounts
            own = [t for t in tiers if t.amount == value]
            if not own:
                continue  # an amount no tool gave: the price rule's
            verdict = _judge(without_money(clause), value, own, tiers)
            if verdict is None and index > 0 and not any(money_values(p) for p in parts[:index]):
                # "Para 4 horas, el medio día: 22 €": what it buys is said just before. Not after
                # another amount: "$8.50 / bag, for 25 bags, $6.75 / bag" says 25 of the $8.50.
                verdict = _judge(f"{parts[index - 1]} {without_money(clause)}", value, own, tiers)
            if verdict:
                failures.append(Unproven("price", f"{clause.strip()!r}: {verdict}"))
    return failures


def _judge(words_text: str, value: Decimal, own: list[Tier], tiers: list[Tier]) -> str | None:
    """None when the words name no row; "" when they name the amount's own row; else the reason."""
    said = _words(words_text)
    mine = set().union(*(t.own for t in own))
    if mine & said:
        return ""
    named = [t for t in tiers if t.amount != value and (t.own - mine) & said]
    if not named:
        return None
    return f"that amount is not the price of {' '.join(sorted((named[0].own - mine) & said))}"
