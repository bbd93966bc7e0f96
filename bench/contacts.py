"""Contact details in customers' messages: does the print shop's turn see them, and offer the lead?

For each message of ``bench/data/printshop_contacts.jsonl`` and ``printshop_contacts2.jsonl``
(both written blind, see the README there; the second is the fresh one), with an item already
in the conversation (the customer has been asking about one):

* capture offered: the routed bundle (the pack's router and fail-closed catalog, as the runtime
  builds them) holds ``capture_lead``, on the messages that give a name and a phone or e-mail;
* the router's reading: ``contact_info`` among its signals, on messages that give a contact, and
  on those that give none (numbers that are quantities, prices, sizes, dates, order numbers);
* the gate's reading (``verification.contacts.contact_values``): the phone found is the one
  written, by its digits; the e-mail found is the one written; nothing found where none is.

Printed for the whole set, the working two thirds and the third kept aside; never the texts (a
blind set: whoever works on the detectors must not read its misses).

Run:
    .venv/bin/python bench/contacts.py [--data PATH ...]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontdesk.capabilities.policy import ToolPolicyCatalog
from frontdesk.packs import PACKS, PackDeps
from frontdesk.platform.clock import SystemClock
from frontdesk.platform.store.engine import Database
from frontdesk.reasoning.router import Router, RouterState
from frontdesk.verification.contacts import contact_values

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench/data/printshop_contacts.jsonl"
# Written in session 35 after the contact reader was tuned with the first set's counts in view.
FRESH = ROOT / "bench/data/printshop_contacts2.jsonl"
IN_CONTEXT = RouterState(item_in_context=True)


@dataclass(frozen=True)
class Line:
    id: str
    text: str
    phone: str | None
    email: str | None
    capture: bool
    aside: bool


@dataclass(frozen=True)
class Reading:
    line: Line
    offered: bool  # capture_lead in the routed bundle
    router_contact: bool  # the router's contact_info signal
    phones: tuple[str, ...]  # the gate's phone numbers, as digits
    emails: tuple[str, ...]  # the gate's e-mail addresses, lower case


# An extension written after the number ("ext. 204", "x12", "máy lẻ 105") is dialled after it:
# the phone found is the number before it.
_EXTENSION = re.compile(r"\s*(?:,\s*)?(?:ext\.?|extension|extensi[oó]n|x|máy lẻ|may le)\s*\d{1,5}\s*$", re.IGNORECASE)


def digits(text: str) -> str:
    return re.sub(r"\D", "", _EXTENSION.sub("", text))


def load(path: Path) -> list[Line]:
    rows: list[dict[str, Any]] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [Line(r["id"], r["text"], r["phone"], r["email"], bool(r["capture"]), bool(r.get("aside"))) for r in rows]


def read_all(lines: Sequence[Line]) -> list[Reading]:
    pack = PACKS["catalog"]
    db = Database.from_url("sqlite+aiosqlite:///:memory:")
    tools = pack.build_tools(PackDeps(db, SystemClock(), "http://bench/media"))
    catalog = ToolPolicyCatalog(tools, pack.policies, discovery_domains=pack.discovery_domains)
    router = Router(pack.lexicons, {})
    readings = []
    for line in lines:
        decision = router.route(line.text, IN_CONTEXT)
        hits, _ = router.signals(line.text)
        found = contact_values(line.text)
        readings.append(
            Reading(
                line,
                "capture_lead" in catalog.bundle(decision).tool_names,
                "contact_info" in hits,
                tuple(v.key for v in found if v.kind == "phone"),
                tuple(v.key for v in found if v.kind == "e-mail"),
            )
        )
    return readings


def share(hits: int, of: int) -> str:
    return f"{hits:>4}/{of:<4} {hits / of:6.1%}" if of else f"{'-':>17}"


def report(readings: Sequence[Reading]) -> None:
    leads = [r for r in readings if r.line.capture]
    with_contact = [r for r in readings if r.line.phone or r.line.email]
    without = [r for r in readings if not (r.line.phone or r.line.email)]
    phones = [r for r in readings if r.line.phone]
    emails = [r for r in readings if r.line.email]
    print(f"  messages: {len(readings)}")
    print(f"  capture_lead offered, name and contact given        {share(sum(r.offered for r in leads), len(leads))}")
    print(
        "  router sees a contact where one is given           "
        f" {share(sum(r.router_contact for r in with_contact), len(with_contact))}"
    )
    print(
        "  router sees a contact where none is given (wrong)  "
        f" {share(sum(r.router_contact for r in without), len(without))}"
    )
    print(
        "  gate finds the phone written (by its digits)       "
        f" {share(sum(digits(r.line.phone or '') in r.phones for r in phones), len(phones))}"
    )
    print(
        "  gate finds the e-mail written                      "
        f" {share(sum((r.line.email or '').lower() in r.emails for r in emails), len(emails))}"
    )
    print(
        "  gate finds a phone or e-mail where none is (wrong) "
        f" {share(sum(bool(r.phones or r.emails) for r in without), len(without))}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, action="append", help="default: both shipped sets")
    args = parser.parse_args(argv)
    for path in args.data or (DATA, FRESH):
        readings = read_all(load(path))
        for part, chosen in (
            ("all", readings),
            ("working two thirds", [r for r in readings if not r.line.aside]),
            ("the third kept aside", [r for r in readings if r.line.aside]),
        ):
            print(f"=== {path.name}: {part}")
            report(chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
