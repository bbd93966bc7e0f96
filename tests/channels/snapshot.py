"""Expected inbound events per fixture, kept as JSON in ``snapshots/<channel>_inbound.json``.

Each file is one object: fixture file name -> the whole event list the fixture becomes, as
``model_dump()`` gives it (keys sorted, ``indent=2``, ``ensure_ascii=False``). An optional ``"_notes"``
object says, per fixture name, why a snapshot looks the way it does; it is not a snapshot.
"""

from __future__ import annotations

import json
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

SNAPSHOTS = Path(__file__).parent / "snapshots"
NOTES = "_notes"


def fixtures(channel: str) -> Traversable:
    """A channel's fixture folder, as the installed package ships it."""
    return resources.files(f"frontdesk.ingestion.channels.{channel}").joinpath("fixtures")


def read_fixture(channel: str, name: str) -> bytes:
    return fixtures(channel).joinpath(name).read_bytes()


def load_snapshots(channel: str) -> dict[str, list[dict[str, Any]]]:
    """The snapshots of one channel, without the notes; a note about no snapshot is an error."""
    path = SNAPSHOTS / f"{channel}_inbound.json"
    snapshots: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    notes = snapshots.pop(NOTES, {})
    stray = sorted(set(notes) - set(snapshots))
    if stray:
        raise ValueError(f"{path.name}: notes for fixtures with no snapshot: {stray}")
    not_lists = sorted(name for name, events in snapshots.items() if not isinstance(events, list))
    if not_lists:
        raise ValueError(f"{path.name}: snapshots that are not an event list: {not_lists}")
    return snapshots
