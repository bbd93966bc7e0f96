"""What one turn did (``Observation``, read back from the store by the runner) and the scenario's
expectations checked against it. Pure: no database, no service."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from frontdesk.evals.scenario import Expect


@dataclass
class Observation:
    """What one turn did, read back from the store."""

    replies: list[str] = field(default_factory=list)
    images: int = 0
    outcome: str | None = None
    route: dict[str, Any] = field(default_factory=dict)
    tools_offered: set[str] = field(default_factory=set)
    write_tools_offered: set[str] = field(default_factory=set)  # offered tools whose policy writes
    tools_called: list[str] = field(default_factory=list)
    tools_refused: list[str] = field(default_factory=list)
    tools_failed: list[str] = field(default_factory=list)  # ran or were validated, and failed
    claims_accepted: list[str] = field(default_factory=list)
    claims_rejected: list[str] = field(default_factory=list)
    tasks_open: dict[str, int] = field(default_factory=dict)
    notifications: dict[str, int] = field(default_factory=dict)
    ai_enabled: bool = True
    drafts: dict[str, str] = field(default_factory=dict)  # open draft's workflow -> its phase


class Checks:
    """Counts checks and collects the failed ones' messages."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.count = 0

    def need(self, ok: bool, message: str) -> None:
        self.count += 1
        if not ok:
            self.failures.append(message)


def check(expect: Expect, seen: Observation) -> tuple[list[str], int]:
    """Every expectation the turn set, checked against what it did. Returns (failures, checks)."""
    checks = Checks()
    need = checks.need
    text = "\n".join(seen.replies)
    if expect.no_reply:
        need(not seen.replies, f"expected no reply, got {text[:200]!r}")
    elif not seen.replies:
        need(False, "expected a reply, none was sent")
    _check_route(expect, seen, checks)
    _check_tools(expect, seen, checks)
    for fragment in expect.reply_contains:
        need(fragment.lower() in text.lower(), f"reply does not contain {fragment!r}: {text[:300]!r}")
    for fragment in expect.reply_not_contains:
        need(fragment.lower() not in text.lower(), f"reply contains {fragment!r}: {text[:300]!r}")
    for claim in expect.claims_accepted:
        need(
            claim in seen.claims_accepted,
            f"claim {claim} was not accepted (accepted: {seen.claims_accepted or 'none'})",
        )
    for claim in expect.claims_rejected:
        need(
            claim in seen.claims_rejected,
            f"claim {claim} was not rejected (rejected: {seen.claims_rejected or 'none'})",
        )
    if expect.outcome is not None:
        need(seen.outcome == expect.outcome, f"outcome {seen.outcome!r}, expected {expect.outcome!r}")
    if expect.fallback is not None:
        need(
            (seen.outcome == "fallback") == expect.fallback,
            f"fallback {'not ' if expect.fallback else ''}shipped (outcome {seen.outcome!r})",
        )
    if expect.images is not None:
        need(seen.images == expect.images, f"{seen.images} images sent, expected {expect.images}")
    _check_side_effects(expect, seen, checks)
    return checks.failures, checks.count


def _check_route(expect: Expect, seen: Observation, checks: Checks) -> None:
    route = seen.route
    if expect.route_intent is not None:
        checks.need(
            route.get("intent") == expect.route_intent,
            f"route intent {route.get('intent')!r}, expected {expect.route_intent!r}",
        )
    if expect.route_domains is not None:
        got = sorted(route.get("domains", []))
        checks.need(
            got == sorted(expect.route_domains), f"route domains {got}, expected {sorted(expect.route_domains)}"
        )
    if expect.route_phase is not None:
        checks.need(
            route.get("phase") == expect.route_phase,
            f"route phase {route.get('phase')!r}, expected {expect.route_phase!r}",
        )
    if expect.side_query is not None:
        checks.need(
            bool(route.get("side_query")) == expect.side_query,
            f"side_query is {bool(route.get('side_query'))}, expected {expect.side_query} (route: {_brief(route)})",
        )


def _check_tools(expect: Expect, seen: Observation, checks: Checks) -> None:
    need = checks.need
    for name in expect.tools_called:
        need(name in seen.tools_called, f"tool {name} was not called (called: {seen.tools_called or 'none'})")
    for name in expect.tools_not_called:
        need(name not in seen.tools_called, f"tool {name} was called")
    for name in expect.tools_refused:
        need(name in seen.tools_refused, f"a call to {name} was not refused (refused: {seen.tools_refused or 'none'})")
    for name in expect.tools_failed:
        need(name in seen.tools_failed, f"no call to {name} failed (failed: {seen.tools_failed or 'none'})")
    for name in expect.tools_offered:
        need(name in seen.tools_offered, f"tool {name} was not offered (offered: {sorted(seen.tools_offered)})")
    for name in expect.tools_not_offered:
        need(name not in seen.tools_offered, f"tool {name} was offered (route: {_brief(seen.route)})")
    if expect.offered_among is not None:
        among = expect.offered_among
        got = sorted(set(among.tools) & seen.tools_offered)
        need(
            got == sorted(among.exactly),
            f"of {among.tools}, offered: {got or 'none'}, expected {sorted(among.exactly) or 'none'}",
        )
    if expect.write_tools_offered is not None:
        writes = sorted(seen.write_tools_offered)
        need(
            bool(writes) == expect.write_tools_offered,
            f"write tools offered: {writes or 'none'}, expected {'some' if expect.write_tools_offered else 'none'}"
            f" (route: {_brief(seen.route)})",
        )


def _check_side_effects(expect: Expect, seen: Observation, checks: Checks) -> None:
    need = checks.need
    if expect.tasks_open is not None:
        for kind, count in expect.tasks_open.items():
            need(
                seen.tasks_open.get(kind, 0) == count,
                f"{seen.tasks_open.get(kind, 0)} open {kind} tasks, expected {count}",
            )
    if expect.notifications is not None:
        for note_kind, count in expect.notifications.items():
            need(
                seen.notifications.get(note_kind, 0) == count,
                f"{seen.notifications.get(note_kind, 0)} {note_kind} notifications, expected {count}",
            )
    if expect.ai_enabled is not None:
        need(seen.ai_enabled == expect.ai_enabled, f"AI is {'on' if seen.ai_enabled else 'off'} for the thread")
    drafts = ", ".join(f"{w} in phase {p!r}" for w, p in seen.drafts.items()) or "none"
    if expect.draft_open is not None:
        need(
            bool(seen.drafts) == expect.draft_open,
            f"open drafts: {drafts}, expected {'one' if expect.draft_open else 'none'}",
        )
    if expect.draft_phase is not None:
        need(
            expect.draft_phase in seen.drafts.values(),
            f"no open draft in phase {expect.draft_phase!r} (open: {drafts})",
        )


def _brief(route: dict[str, Any]) -> str:
    keys = ("intent", "domains", "phase", "side_query", "confidence")
    return ", ".join(f"{k}={route.get(k)!r}" for k in keys if k in route)


def select_path(value: Any, path: str) -> tuple[bool, Any]:
    """The part of a JSON value at a dotted path (list indexes as numbers): (found, value)."""
    for key in path.split(".") if path else []:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return False, None
    return True, value
