"""The business file: a tenant's profile and catalog as YAML, JSON or CSV (docs/business-data.md).

Reading is strict and says where: every problem names its line (YAML and JSON: the line of the
item's mapping; CSV: the row's line) and the field, and a file with any problem yields no data at
all, so an import never half-writes. Photo files are named relative to the business file and
checked here (type from the bytes, size), before anything is stored.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from frontdesk.business._problems import problems as validation_problems
from frontdesk.business.catalog import ON_REQUEST, CatalogItem, ItemSpec
from frontdesk.business.photos import checked_photo
from frontdesk.business.profile import BusinessProfile
from frontdesk.errors import PayloadError

FORMATS = ("yaml", "json", "csv")
LINE_KEY = "__line__"
MAX_FILE_BYTES = 20 * 1024 * 1024
LIST_SEPARATOR = " | "


@dataclass(frozen=True)
class LoadedPhoto:
    id: str
    caption: dict[str, str]
    data: bytes
    mime_type: str


@dataclass(frozen=True)
class LoadedItem:
    spec: ItemSpec
    photos: tuple[LoadedPhoto, ...]
    line: int | None


@dataclass(frozen=True)
class BusinessFile:
    """A business file, read and checked: its profile (None: the file leaves the profile alone)
    and its items in the file's order."""

    profile: BusinessProfile | None
    items: tuple[LoadedItem, ...]
    problems: tuple[str, ...] = field(default=())


def file_format(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    kind = {"yml": "yaml"}.get(suffix, suffix)
    if kind not in FORMATS:
        raise PayloadError(f"{path.name}: a business file ends in .yaml, .yml, .json or .csv")
    return kind


def read_business_file(path: Path, languages: list[str]) -> BusinessFile:
    """Read and check ``path`` for a tenant speaking ``languages`` (default first). Raises
    ``PayloadError`` listing every problem, each with its line, when there is any."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise PayloadError(f"{path}: {size:,} bytes; a business file is at most {MAX_FILE_BYTES:,}")
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise PayloadError(f"{path}: cannot read it ({exc})") from exc
    kind = file_format(path)
    raw = _parse_csv(text) if kind == "csv" else _parse_document(text, path.name, kind)
    return _check(raw, path.parent, languages)


def business_from_mapping(raw: dict[str, Any], folder: Path, languages: list[str]) -> BusinessFile:
    """A business file's content given inline (a saved scenario carries its business), checked as
    a file's is; photo paths are relative to ``folder``."""
    return _check(raw, folder, languages)


# -- parsing: raw dicts with their lines ----------------------------------------------------------


class _LineLoader(yaml.SafeLoader):
    """A safe loader that records each mapping's first line and refuses a key given twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=True)
        mapping[LINE_KEY] = node.start_mark.line + 1
        return mapping


def _parse_document(text: str, name: str, kind: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        if kind == "json":  # JSON that YAML cannot read (tabs, some escapes): no lines, same checks
            try:
                data = json.loads(text)
            except json.JSONDecodeError as json_exc:
                raise PayloadError(f"{name}: line {json_exc.lineno}: not valid JSON: {json_exc.msg}") from json_exc
        else:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}: " if mark is not None else ""
            raise PayloadError(f"{name}: {where}not valid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    if not isinstance(data, dict):
        raise PayloadError(f"{name}: a business file holds one mapping with `profile` and/or `items`")
    return data


def _parse_csv(text: str) -> dict[str, Any]:
    """One item per row. Columns: ``id``, ``category``, ``active``, ``name.<lang>``,
    ``summary.<lang>``, ``description.<lang>``, ``currency``, ``unit.<lang>``, ``price`` (an
    amount, ``250=45 | 500=70`` tiers, or ``on_request``), ``turnaround_days``, ``min_quantity``,
    ``synonyms.<lang>``, ``tier_label.<lang>`` (one per tier) and ``photos`` (``id: file``) with
    ``caption.<lang>`` (one per photo); lists are `` | ``-separated."""
    reader = csv.DictReader(io.StringIO(text))
    items: list[dict[str, Any]] = []
    for row in reader:
        item = _csv_item({k.strip(): (v or "").strip() for k, v in row.items() if k is not None})
        item[LINE_KEY] = reader.line_num
        items.append(item)
    return {"items": items}


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split("|") if part.strip()]


def _csv_item(row: dict[str, str]) -> dict[str, Any]:
    item: dict[str, Any] = {"id": row.get("id", "")}
    for key in ("category", "turnaround_days", "min_quantity", "active"):
        if row.get(key):
            item[key] = row[key]
    by_language: dict[str, dict[str, str]] = {}
    for column, value in row.items():
        base, dot, language = column.partition(".")
        if dot and value:
            by_language.setdefault(base, {})[language] = value
    for key in ("name", "summary", "description"):
        item[key] = by_language.get(key, {})
    item["synonyms"] = {lang: _split(v) for lang, v in by_language.get("synonyms", {}).items()}
    price = row.get("price", "")
    if price == ON_REQUEST:
        item["price"] = ON_REQUEST
    elif price:
        labels = _positional(by_language.get("tier_label", {}))
        tiers: list[dict[str, Any]] = []
        for index, part in enumerate(_split(price)):
            quantity, _, amount = part.rpartition("=")
            tier: dict[str, Any] = {"amount": amount, "label": _at(labels, index)}
            tiers.append({**tier, "quantity": quantity} if quantity else tier)
        item["price"] = {"currency": row.get("currency", ""), "unit": by_language.get("unit", {}), "tiers": tiers}
    captions = _positional(by_language.get("caption", {}))
    photos = []
    for index, entry in enumerate(_split(row.get("photos", ""))):
        photo_id, _, file = (part.strip() for part in entry.partition(":"))
        photos.append({"id": photo_id, "file": file, "caption": _at(captions, index)})
    item["photos"] = photos
    return item


def _positional(by_language: dict[str, str]) -> dict[str, list[str]]:
    """``caption.en`` / ``tier_label.en`` cells: one text per photo or tier, in their order (an
    empty one keeps its place)."""
    return {lang: [part.strip() for part in value.split("|")] for lang, value in by_language.items()}


def _at(texts: dict[str, list[str]], index: int) -> dict[str, str]:
    return {lang: values[index] for lang, values in texts.items() if index < len(values) and values[index]}


# -- checking: typed data, or every problem ------------------------------------------------------


def _check(raw: dict[str, Any], folder: Path, languages: list[str]) -> BusinessFile:
    problems: list[str] = []
    unknown = sorted(set(raw) - {"profile", "items", "version", LINE_KEY})
    if unknown:
        problems.append(f"unknown top-level keys {', '.join(unknown)} (a business file has profile and items)")
    profile = _check_profile(raw.get("profile"), languages, problems)
    items: list[LoadedItem] = []
    seen_items: dict[str, str] = {}
    seen_photos: dict[str, str] = {}
    raw_items = raw.get("items", [])
    if not isinstance(raw_items, list):
        problems.append("items: a list of items")
        raw_items = []
    for index, entry in enumerate(raw_items):
        where = _where(entry, index)
        loaded = _check_item(entry, where, folder, languages, problems)
        if loaded is None:
            continue
        if loaded.spec.id in seen_items:
            problems.append(f"{where}: the id {loaded.spec.id!r} is used by {seen_items[loaded.spec.id]} too")
        seen_items.setdefault(loaded.spec.id, where)
        for photo in loaded.photos:
            if photo.id in seen_photos:
                problems.append(f"{where}: the photo id {photo.id!r} is used by {seen_photos[photo.id]} too")
            seen_photos.setdefault(photo.id, where)
        items.append(loaded)
    if problems:
        raise PayloadError(
            f"{len(problems)} problem(s), nothing was imported:\n" + "\n".join(problems), details=problems
        )
    return BusinessFile(profile, tuple(items))


def _where(entry: Any, index: int) -> str:
    line = entry.get(LINE_KEY) if isinstance(entry, dict) else None
    label = f"item {entry.get('id')!r}" if isinstance(entry, dict) and entry.get("id") else f"item {index + 1}"
    return f"line {line}, {label}" if line else label


def _strip_lines(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_lines(v) for k, v in value.items() if k != LINE_KEY}
    if isinstance(value, list):
        return [_strip_lines(v) for v in value]
    return value


def _check_profile(raw: Any, languages: list[str], problems: list[str]) -> BusinessProfile | None:
    if raw is None:
        return None
    where = f"line {raw.get(LINE_KEY)}, profile" if isinstance(raw, dict) and raw.get(LINE_KEY) else "profile"
    try:
        profile = BusinessProfile.model_validate(_strip_lines(raw))
    except ValidationError as exc:
        problems.extend(f"{where}: {p}" for p in validation_problems(exc))
        return None
    problems.extend(f"{where}: {p}" for p in profile.language_problems(languages))
    return profile


def _check_item(raw: Any, where: str, folder: Path, languages: list[str], problems: list[str]) -> LoadedItem | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: an item is a mapping (id, name, price...)")
        return None
    try:
        spec = ItemSpec.model_validate(_strip_lines(raw))
    except ValidationError as exc:
        problems.extend(f"{where}: {p}" for p in validation_problems(exc))
        return None
    found = [f"{where}: {p}" for p in spec.language_problems(languages, languages[0])]
    photos: list[LoadedPhoto] = []
    for photo in spec.photos:
        path = (folder / photo.file).resolve()
        try:
            data = path.read_bytes()
            mime = checked_photo(data, f"photo {photo.id} ({photo.file})")
        except OSError as exc:
            found.append(f"{where}: photo {photo.id}: cannot read {photo.file} ({exc.strerror or exc})")
            continue
        except PayloadError as exc:
            found.append(f"{where}: {exc.message}")
            continue
        photos.append(LoadedPhoto(photo.id, dict(photo.caption), data, mime))
    problems.extend(found)
    return None if found else LoadedItem(spec, tuple(photos), raw.get(LINE_KEY))


# -- writing -------------------------------------------------------------------------------------


def document(profile: BusinessProfile | None, items: list[CatalogItem], photo_files: dict[str, str]) -> dict[str, Any]:
    """The business file's content (YAML/JSON) for what is stored; ``photo_files`` maps photo ids
    to the paths the export wrote them to."""
    data: dict[str, Any] = {"version": 1}
    if profile is not None:
        data["profile"] = _compact(profile.model_dump(mode="json"))
    data["items"] = [_item_document(item, photo_files) for item in items]
    return data


def _item_document(item: CatalogItem, photo_files: dict[str, str]) -> dict[str, Any]:
    dumped = _compact(item.model_dump(mode="json", exclude={"photos"}))
    dumped["active"] = item.active
    if isinstance(item.price, str):
        dumped["price"] = item.price
    dumped["photos"] = [
        _compact({"id": p.id, "file": photo_files[p.id], "caption": p.caption})
        for p in item.photos
        if p.id in photo_files
    ]
    return dumped


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """Leave out empty texts and lists, so an exported file reads like one a person wrote."""
    return {k: v for k, v in data.items() if v not in ({}, [], None, "")}


def render(data: dict[str, Any], kind: str) -> str:
    if kind == "json":
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    if kind == "yaml":
        return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100, default_flow_style=None)
    return _render_csv(data["items"])


def _positional_cells(column: str, entries: list[dict[str, Any]], key: str) -> dict[str, str]:
    languages = sorted({lang for e in entries for lang in e.get(key, {})})
    return {
        f"{column}.{lang}": LIST_SEPARATOR.join(e.get(key, {}).get(lang, "") for e in entries) for lang in languages
    }


def _render_csv(items: list[dict[str, Any]]) -> str:
    columns: list[str] = ["id", "category", "active"]
    rows: list[dict[str, str]] = []
    for item in items:
        row: dict[str, str] = {
            "id": item["id"],
            "category": item.get("category", ""),
            "active": str(item["active"]).lower(),
        }
        for key in ("name", "summary", "description"):
            row.update({f"{key}.{lang}": text for lang, text in item.get(key, {}).items()})
        price = item["price"]
        if price == ON_REQUEST:
            row["price"] = ON_REQUEST
        else:
            row["currency"] = price["currency"]
            row.update({f"unit.{lang}": text for lang, text in price.get("unit", {}).items()})
            row["price"] = LIST_SEPARATOR.join(f"{t['quantity']}={t['amount']}" for t in price["tiers"])
            row.update(_positional_cells("tier_label", price["tiers"], "label"))
        for key in ("turnaround_days", "min_quantity"):
            if key in item:
                row[key] = str(item[key])
        row.update({f"synonyms.{lang}": LIST_SEPARATOR.join(words) for lang, words in item.get("synonyms", {}).items()})
        photos = item.get("photos", [])
        if photos:
            row["photos"] = LIST_SEPARATOR.join(f"{p['id']}: {p['file']}" for p in photos)
            row.update(_positional_cells("caption", photos, "caption"))
        columns.extend(c for c in row if c not in columns)
        rows.append(row)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
