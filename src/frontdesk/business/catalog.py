"""A business's catalog: what it sells, at what price, how fast, with which photos.

An item has a stable slug id (what tools, claims and the tool ledger cite), its name and words in
each of the business's languages, and a structured price: a currency, the unit one counts (cards,
cakes, haircuts) and one or more quantity tiers, each the amount for that many units; or
``on_request`` when the team quotes it. The verification gate compares prices as amount and
currency (``Price.evidence_texts``); the texts it reads are made from the structure here and
read back exactly by ``verification.money`` (a test proves the round trip per currency).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from frontdesk.business.text import LanguageCode, LongText, ShortText, language_problems, pick

SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
Slug = Annotated[str, Field(min_length=1, max_length=60, pattern=SLUG_PATTERN)]
ON_REQUEST = "on_request"
RESERVED_IDS = frozenset({"new"})  # /console/catalog/new is the form for a new item


class Currency(BaseModel):
    """How one currency is written so that the gate reads it back as the same amount."""

    model_config = ConfigDict(frozen=True)
    code: str
    symbol: str
    prefix: bool  # "$45" rather than "45 ₫"
    decimals: int
    thousands: str


# The currencies the verification gate reads (``verification.money``). Another currency would be
# quoted to customers and never proven, so it is refused at import with this list.
CURRENCIES = {
    "USD": Currency(code="USD", symbol="$", prefix=True, decimals=2, thousands=","),
    "EUR": Currency(code="EUR", symbol="€", prefix=True, decimals=2, thousands=","),
    "GBP": Currency(code="GBP", symbol="£", prefix=True, decimals=2, thousands=","),
    "VND": Currency(code="VND", symbol="₫", prefix=False, decimals=0, thousands="."),
}


def format_amount(amount: Decimal, currency: str) -> str:
    """``$1,200``, ``$12.50``, ``1.200.000 ₫``: how a price is shown, and read back by the gate."""
    spec = CURRENCIES[currency]
    whole, cents = divmod(abs(amount), 1)
    digits = f"{int(whole):,}".replace(",", spec.thousands)
    if cents and spec.decimals:
        digits += "." + f"{cents:.{spec.decimals}f}"[2:]
    return f"{spec.symbol}{digits}" if spec.prefix else f"{digits} {spec.symbol}"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class PriceTier(_Frozen):
    """``amount`` buys ``quantity`` units, or what ``label`` says (a size, a variant, "for 10 or
    more") when the unit alone does not."""

    quantity: int = Field(default=1, ge=1, le=10_000_000)
    amount: Decimal = Field(ge=0, le=Decimal("1e12"))
    label: ShortText = Field(default_factory=dict)


class Price(_Frozen):
    """``amount`` (+ ``quantity``) is the short form of a single tier."""

    currency: str
    unit: ShortText = Field(default_factory=dict)
    tiers: list[PriceTier] = Field(min_length=1, max_length=12)

    @model_validator(mode="before")
    @classmethod
    def _single_tier(cls, data: Any) -> Any:
        if isinstance(data, dict) and "amount" in data:
            if "tiers" in data:
                raise ValueError("give either amount (one price) or tiers (prices by quantity), not both")
            tier = {"amount": data["amount"], "quantity": data.get("quantity", 1)}
            data = {**{k: v for k, v in data.items() if k not in ("amount", "quantity")}, "tiers": [tier]}
        return data

    @field_validator("currency")
    @classmethod
    def _known_currency(cls, value: str) -> str:
        code = value.strip().upper()
        if code not in CURRENCIES:
            raise ValueError(f"currency {value!r} is not one the price check reads ({', '.join(CURRENCIES)})")
        return code

    @model_validator(mode="after")
    def _tiers(self) -> Price:
        kinds = [(t.quantity, tuple(sorted(t.label.items()))) for t in self.tiers]
        if len(set(kinds)) != len(kinds):
            raise ValueError("two tiers buy the same thing: give each its own quantity or label")
        decimals = CURRENCIES[self.currency].decimals
        for tier in self.tiers:
            if tier.amount != round(tier.amount, decimals):
                raise ValueError(f"{tier.amount} {self.currency}: at most {decimals} decimals")
        return self

    def texts(self, language: str, default: str) -> list[str]:
        """One line per tier: ``$45 / 250 cards``; ``$30 / haircut`` for a single unit;
        ``$12 / 11x17 poster`` for a labelled one."""
        unit = pick(self.unit, language, default)
        lines = []
        for tier in self.tiers:
            money = format_amount(tier.amount, self.currency)
            label = pick(tier.label, language, default)
            counted = label or (f"{tier.quantity} {unit}".strip() if tier.quantity > 1 else unit)
            lines.append(f"{money} / {counted}" if counted else money)
        return lines


class Photo(_Frozen):
    """A gallery photo as stored: its bytes live in the media store under ``media_key``."""

    id: Slug
    caption: ShortText = Field(default_factory=dict)
    media_key: str
    mime_type: str

    @property
    def file_name(self) -> str:
        """``<id>-<8 hex of its content hash>.<ext>``, the last part of its public URL: a replaced
        picture gets a new URL, so no cache or platform shows the old one under it."""
        stem, _, extension = self.media_key.rpartition("/")[2].partition(".")
        return f"{self.id}-{stem[:8]}.{extension}"


class PhotoSpec(_Frozen):
    """A gallery photo in an import file: ``file`` is a path relative to that file."""

    id: Slug
    file: str = Field(min_length=1, max_length=300)
    caption: ShortText = Field(default_factory=dict)


def _synonyms(value: dict[str, list[str]]) -> dict[str, list[str]]:
    cleaned: dict[str, list[str]] = {}
    for language, words in value.items():
        kept = list(dict.fromkeys(w.strip() for w in words if w.strip()))
        if kept:
            cleaned[language] = kept
    return cleaned


Synonyms = Annotated[
    dict[LanguageCode, list[Annotated[str, Field(max_length=80)]]],
    AfterValidator(_synonyms),
]


def _price_kind(value: Any) -> str:
    """``on_request`` (a text) or amounts (a mapping): only that branch's problems are reported."""
    return "on_request" if isinstance(value, str) else "amounts"


class ItemFields(_Frozen):
    id: Slug
    category: str = Field(default="", max_length=60)
    name: ShortText
    summary: LongText = Field(default_factory=dict)
    description: LongText = Field(default_factory=dict)
    price: Annotated[
        Annotated[Price, Tag("amounts")] | Annotated[Literal["on_request"], Tag("on_request")],
        Discriminator(_price_kind),
    ]
    turnaround_days: int | None = Field(default=None, ge=0, le=365)
    min_quantity: int = Field(default=1, ge=1, le=10_000_000)
    synonyms: Synonyms = Field(default_factory=dict)
    active: bool = True

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_IDS:
            raise ValueError(f"{value!r} is reserved (the console's page for a new item): choose another id")
        return value

    @field_validator("name")
    @classmethod
    def _named(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise ValueError("an item needs a name")
        return value

    @field_validator("synonyms")
    @classmethod
    def _few_synonyms(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for language, words in value.items():
            if len(words) > 40:
                raise ValueError(f"{language}: at most 40 synonyms")
        return value

    @property
    def priced(self) -> bool:
        return isinstance(self.price, Price)

    def display_name(self, language: str, default: str) -> str:
        return pick(self.name, language, default)

    def price_texts(self, language: str, default: str) -> list[str]:
        return self.price.texts(language, default) if isinstance(self.price, Price) else []

    def words(self) -> list[str]:
        """Every name and synonym in every language: what a customer may call this item."""
        return list(dict.fromkeys([*self.name.values(), *(w for ws in self.synonyms.values() for w in ws)]))

    def language_problems(self, languages: list[str], default: str) -> list[str]:
        problems: list[str] = []
        if default not in self.name:
            problems.append(f"name: no name in {default}, the business's default language")
        for field in ("name", "summary", "description", "synonyms"):
            problems += language_problems(field, getattr(self, field), languages)
        if isinstance(self.price, Price):
            problems += language_problems("price.unit", self.price.unit, languages)
            for tier in self.price.tiers:
                problems += language_problems("price tier label", tier.label, languages)
        return problems


class CatalogItem(ItemFields):
    photos: list[Photo] = Field(default_factory=list, max_length=20)


class ItemSpec(ItemFields):
    photos: list[PhotoSpec] = Field(default_factory=list, max_length=20)

    def language_problems(self, languages: list[str], default: str) -> list[str]:
        problems = super().language_problems(languages, default)
        for photo in self.photos:
            problems += language_problems(f"photos {photo.id} caption", photo.caption, languages)
        return problems


def item_fields(item: ItemFields) -> dict[str, Any]:
    """An item's own fields (no photos), as stored in ``catalog_items.data`` and compared by diffs."""
    return item.model_dump(mode="json", exclude={"photos", "id", "active"})
