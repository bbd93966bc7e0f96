"""A conversation that went wrong, written as a scenario file (docs/eval.md): "save as scenario"
in the console.

The file replays the conversation up to the turn an operator flagged:

- the customer's messages, turn by turn, as they came (bursts as bursts);
- a script that makes, for every turn, the tool calls the model really made, with the
  arguments it really gave; the tools run for real in the eval, against the business's data as
  it was when the scenario was saved (its profile and catalog, written into the file), so what
  they return is what the model saw, and it is the evidence the gate holds the reply to;
- for the turns before, the replies the model really wrote (the refused ones too, so the
  conversation goes the same way); for the flagged turn, the reply the operator says it should
  have sent;
- the checks on the flagged turn: what the operator's correction removed from the reply must
  not be in it, what it added must be. The file passes with the correction, and fails if the
  recorded reply comes back, whatever changed to let it through (a policy, the gate, a model).

Photos are not carried (a file with pictures would be a folder): image blocks are left out of
the replayed replies, and the file says so.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import yaml

from frontdesk.humans.console.masking import Masker
from frontdesk.output.blocks import MAX_BLOCKS, MAX_TEXT_CHARS

MAX_CHECKS = 5  # fragments of each kind: the differences that matter, not a diff of a rewrite
MAX_FRAGMENT_CHARS = 120
JOINED_GAP_WORDS = 2
HANDOFF_TOOLS = frozenset({"refer_to_human"})
RESULT_PREVIEW_CHARS = 300
_EDGE_PUNCTUATION = " \t\n.,!?;:\"'()[]¡¿…"


@dataclass(frozen=True)
class RecordedTurn:
    """One agent turn as the store has it (``turn_traces`` and the messages it answered)."""

    trace_id: int
    started_at: datetime
    said: list[str]  # the customer's messages of the turn, in order
    calls: list[dict[str, Any]]  # the trace's tool calls: name, args (JSON text), ok, result
    refused: list[dict[str, Any]]  # replies the gate refused: reply_text, claims
    blocks: list[dict[str, Any]]  # what the customer read (blocks as JSON)
    claims: list[dict[str, Any]]  # the claims of the reply that shipped
    outcome: str


@dataclass(frozen=True)
class Tenancy:
    """What the scenario's business is: the tenant's pack, languages and policy, and its business
    file (``business/files.document``) without photos."""

    pack: str
    channel: str
    languages: list[str]
    policy: dict[str, Any]
    business: dict[str, Any] | None


@dataclass(frozen=True)
class Correction:
    note: str  # what the reply should have done, in the operator's words
    reply: str  # the reply it should have sent


@dataclass(frozen=True)
class Provenance:
    """Who saved the file, when, and from which conversation (the file's header says so)."""

    saved_by: str
    saved_at: datetime
    conversation_id: str


@dataclass(frozen=True)
class Saved:
    content: str  # the scenario file
    note: str  # the operator's note, masked
    sent: str  # what the customer read on the flagged turn
    must_not_say: list[str] = field(default_factory=list)
    must_say: list[str] = field(default_factory=list)
    replayed: str = ""  # the same file with the reply that was sent: it must fail


class NothingToCheck(ValueError):
    """The correction does not change what the reply says: the scenario could not fail."""


def reply_text(blocks: Sequence[dict[str, Any]], *, images: bool = True) -> str:
    """What the customer read: the text blocks and (``images``) the photos' captions."""
    parts = [b.get("text") if b.get("type") == "text" else (b.get("caption") if images else None) for b in blocks]
    return "\n\n".join(p for p in parts if p)


def differences(sent: str, corrected: str) -> tuple[list[str], list[str]]:
    """The fragments of ``sent`` that the correction took out, and those it put in, compared word
    by word (case and edge punctuation aside). Each is a verbatim piece of its text, so a check
    on it can only fail for the reason it was written."""
    old, new = _words(sent), _words(corrected)
    matcher = difflib.SequenceMatcher(None, [w[0] for w in old], [w[0] for w in new], autojunk=False)
    # Changes a word or two apart are one change: a rewritten sentence that happens to keep an
    # "a" is one fragment, not two.
    spans: list[list[int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if spans and i1 - spans[-1][1] <= JOINED_GAP_WORDS:
            spans[-1][1], spans[-1][3] = i2, j2
        else:
            spans.append([i1, i2, j1, j2])
    removed = [f for i1, i2, _, _ in spans if i2 > i1 for f in _fragments(sent, old, i1, i2)]
    added = [f for _, _, j1, j2 in spans if j2 > j1 for f in _fragments(corrected, new, j1, j2)]
    return _kept(removed, corrected), _kept(added, sent)


Word = tuple[str, tuple[int, int], int]  # folded word, its span in the text, its paragraph


def _words(text: str) -> list[Word]:
    found = []
    for paragraph, match in enumerate(re.finditer(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", text, re.S)):
        for word in re.finditer(r"\S+", match.group(0)):
            folded = word.group(0).strip(_EDGE_PUNCTUATION).lower()
            if folded:
                start = match.start() + word.start()
                found.append((folded, (start, start + len(word.group(0))), paragraph))
    return found


def _fragments(text: str, words: list[Word], start: int, end: int) -> list[str]:
    """Words ``start:end`` of ``text``, verbatim, one fragment per paragraph: a paragraph is a
    block of the reply, and the eval reads blocks one line apart, so a fragment that crossed
    a blank line could never be found. A short word alone ("not", "no") would match inside any
    reply: it keeps a word of context on each side ("do not deliver")."""
    if end - start == 1 and words[start][0].isalpha() and len(words[start][0]) < 4:
        paragraph = words[start][2]
        start = start - 1 if start > 0 and words[start - 1][2] == paragraph else start
        end = end + 1 if end < len(words) and words[end][2] == paragraph else end
    pieces = []
    for _, group in itertools.groupby(words[start:end], key=lambda w: w[2]):
        run = list(group)
        piece = text[run[0][1][0] : run[-1][1][1]].strip(_EDGE_PUNCTUATION)
        if len(piece) > MAX_FRAGMENT_CHARS:
            piece = piece[:MAX_FRAGMENT_CHARS].rsplit(" ", 1)[0].strip(_EDGE_PUNCTUATION)
        pieces.append(piece)
    return pieces


def _kept(fragments: list[str], other: str) -> list[str]:
    """Fragments with a letter or digit that the other text does not contain anyway."""
    other = other.lower()
    kept = [f for f in fragments if any(c.isalnum() for c in f) and f.lower() not in other]
    return list(dict.fromkeys(kept))[:MAX_CHECKS]


def build(
    turns: Sequence[RecordedTurn],
    tenancy: Tenancy,
    correction: Correction,
    masker: Masker,
    provenance: Provenance,
) -> Saved:
    """The scenario file for the last of ``turns`` (the flagged one), after the ones before it.
    Raises ``NothingToCheck`` when the correction does not change what the reply says."""
    turns = _since_last_handoff(turns)
    flagged = turns[-1]
    sent = masker.text(reply_text(flagged.blocks, images=False))  # as the form showed it
    corrected = masker.text(correction.reply.replace("\r\n", "\n").strip())
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", corrected) if p.strip()]
    if len(paragraphs) > MAX_BLOCKS or any(len(p) > MAX_TEXT_CHARS for p in paragraphs):
        raise NothingToCheck(
            f"a reply is at most {MAX_BLOCKS} paragraphs of {MAX_TEXT_CHARS:,} characters: shorten the reply"
        )
    must_not_say, must_say = differences(sent, corrected)
    if not must_not_say and not must_say:
        raise NothingToCheck("the reply it should have sent says what was sent: change what was wrong")
    blocks = [{"type": "text", "text": p} for p in paragraphs]
    sent_blocks = [masker.value(b) for b in flagged.blocks if b.get("type") == "text"]
    expect: dict[str, Any] = {}
    if must_say:
        expect["reply_contains"] = must_say
    if must_not_say:
        expect["reply_not_contains"] = must_not_say
    note = masker.text(correction.note.strip())
    scenario: dict[str, Any] = {
        "name": f"saved from the console: {_first_line(note, 80)}",
        "description": note,
        "tags": ["saved"],
        "at": _aware(flagged.started_at).replace(microsecond=0).isoformat(),
        "pack": tenancy.pack,
        "channel": "terminal" if tenancy.channel == "terminal" else "webchat",
        "languages": list(tenancy.languages),
        "policy": tenancy.policy,
        "turns": [{"say": [masker.text(s) for s in turn.said]} for turn in turns],
        "model": {"script": {"name": f"saved-{flagged.trace_id}", "rules": []}},
    }
    scenario["turns"][-1]["expect"] = expect
    if tenancy.business is not None:
        scenario["business"] = tenancy.business
    photos_left_out = any(b.get("type") != "text" for t in turns for b in t.blocks)
    header = _header(flagged, tenancy, note, masker, provenance, sent, photos_left_out)

    def written(final_blocks: list[dict[str, Any]]) -> str:
        # The flagged turn's rule first: it wins even if an earlier turn said the same words.
        rules = [_rule(flagged, masker, _reply(final_blocks, flagged.claims))]
        rules += [_rule(turn, masker, None) for turn in reversed(turns[:-1])]
        scenario["model"]["script"]["rules"] = rules
        return header + yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True, width=100)

    return Saved(written(blocks), note, sent, must_not_say, must_say, replayed=written(sent_blocks or blocks))


def _since_last_handoff(turns: Sequence[RecordedTurn]) -> Sequence[RecordedTurn]:
    """The turns after the last earlier hand-off: a hand-off turns the AI off for the thread, and
    turning it back on is an operator's act the file cannot replay."""
    for at in range(len(turns) - 2, -1, -1):
        if any(c.get("ok") and c.get("name") in HANDOFF_TOOLS for c in turns[at].calls):
            return turns[at + 1 :]
    return turns


def _rule(turn: RecordedTurn, masker: Masker, final: dict[str, Any] | None) -> dict[str, Any]:
    """The turn's model requests: each tool call, then (an earlier turn) each refused reply and the
    one that shipped, or (the flagged turn) the correction."""
    responses: list[dict[str, Any]] = [_call(call, masker) for call in turn.calls]
    if final is not None:
        responses.append(final)
    else:
        for attempt in turn.refused:
            text = masker.text(str(attempt.get("reply_text") or "")).strip()
            if text:
                responses.append(_reply([{"type": "text", "text": text}], attempt.get("claims") or []))
        if turn.outcome in ("replied", "salvaged"):
            blocks = [masker.value(b) for b in turn.blocks if b.get("type") == "text"]
            if blocks:
                responses.append(_reply(blocks, turn.claims))
    if not responses:
        responses.append({"reply": masker.text(reply_text(turn.blocks)) or "…"})
    said = "\n".join(masker.text(s) for s in turn.said)
    return {"match": rf"\A{re.escape(said)}\Z", "responses": responses}


def _call(call: dict[str, Any], masker: Masker) -> dict[str, Any]:
    raw = str(call.get("args") or "{}")
    try:
        args = json.loads(raw)
    except json.JSONDecodeError:
        return {"tool": str(call.get("name")), "raw_args": masker.text(raw)}
    return {"tool": str(call.get("name")), "args": masker.value(args) if isinstance(args, dict) else {}}


def _reply(blocks: list[dict[str, Any]], claims: list[dict[str, Any]]) -> dict[str, Any]:
    kept = [
        # A saved request's id is the production store's; the eval's has another one, and the
        # claim proves the request was saved without it.
        {k: v for k, v in c.items() if v is not None and not (c.get("type") == "lead_captured" and k == "follow_up_id")}
        for c in claims
        if isinstance(c, dict) and c.get("type") != "images_shown"  # no photos in the file
    ]
    return {"reply": {"blocks": blocks, "claims": kept}}


def _header(
    flagged: RecordedTurn,
    tenancy: Tenancy,
    note: str,
    masker: Masker,
    provenance: Provenance,
    sent: str,
    photos_left_out: bool,
) -> str:
    lines = [
        f"Saved from the console by {provenance.saved_by} on {_aware(provenance.saved_at):%Y-%m-%d %H:%M} UTC:",
        f"conversation {provenance.conversation_id}, turn {flagged.trace_id} ({flagged.outcome}).",
        "Run it with: frontdesk eval <this file>",
        "",
        "What the operator says the reply should have done:",
        *_quoted(note),
        "",
        "What the customer read:",
        *_quoted(sent),
        "",
        "What the turn's tools returned in production (the eval runs them again on the business below):",
    ]
    for call in flagged.calls:
        state = "" if call.get("ok") else f"  [{masker.text(str(call.get('error', 'failed')))}]"
        lines.append(f"  {call.get('name')} {masker.text(str(call.get('args') or ''))}{state}")
        if call.get("result"):
            returned = masker.text(str(call["result"]))[:RESULT_PREVIEW_CHARS]
            lines.extend(_quoted("\n".join(textwrap.wrap(returned, 92)), "    -> "))
    if not flagged.calls:
        lines.append("  (no tool was called)")
    if tenancy.channel not in ("webchat", "terminal"):
        lines += ["", f"The conversation was on {tenancy.channel}; the eval plays it on the web chat."]
    if photos_left_out:
        lines += ["", "Photos are not in this file: image blocks were left out of the replayed replies."]
    if masker.masked:
        lines += ["", "The customer's phone numbers and e-mail addresses are replaced by stand-ins."]
    # One comment line per line, whatever the texts hold: a line break of any kind inside one
    # (an error's, a reply's) would end the comment and put the rest into the YAML.
    return "".join(f"# {' '.join(line.splitlines())}".rstrip() + "\n" for line in lines) + "\n"


def _quoted(text: str, prefix: str = "  > ") -> list[str]:
    return [prefix + line for line in text.splitlines() or [""]]


def _first_line(text: str, limit: int) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "a reply to fix"
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
