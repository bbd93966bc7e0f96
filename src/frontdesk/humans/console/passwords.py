"""Which operator passwords are refused: too short, or among what attackers try first.

"What attackers try first" is zxcvbn's estimate: its lists (30,000 common passwords, names,
English words) and patterns (repeats, sequences, keyboard walks, dates, l33t), plus the
operator's own e-mail and name. A password it scores below 3 (fewer than about 10^10 guesses,
Dropbox's line for a password that survives an offline attack on a slow hash) is refused, with
its reason. Length is the only composition rule, as NIST SP 800-63B advises.
"""

from __future__ import annotations

import re

from zxcvbn import zxcvbn  # type: ignore[import-untyped]  # the package ships no type stubs

MIN_PASSWORD = 12
MIN_SCORE = 3
# zxcvbn refuses longer input (its matching is quadratic); past this many characters a password
# is judged by its start, which a long password can afford.
_JUDGED_CHARS = 72
_NOT_ALNUM = re.compile(r"[\W_]+")


def password_problem(password: str, *, email: str = "", name: str = "") -> str | None:
    """Why ``password`` may not be an operator's (one sentence), or None when it may."""
    if len(password) < MIN_PASSWORD:
        return f"a password needs at least {MIN_PASSWORD} characters"
    squashed = _squash(password)
    local_part = _squash(email.split("@", 1)[0])
    if email and (_squash(email) in squashed or (len(local_part) >= 4 and local_part in squashed)):
        return "a password must not contain the operator's e-mail address"
    names = [_squash(part) for part in (name, *name.split())]
    if any(len(part) >= 4 and part in squashed for part in names):
        return "a password must not contain the operator's name"
    personal = [email, email.split("@", 1)[0], name, *name.split(), "frontdesk"]
    estimate = zxcvbn(password[:_JUDGED_CHARS], user_inputs=[word.lower() for word in personal if word])
    if estimate["score"] >= MIN_SCORE:
        return None
    warning = str(estimate["feedback"].get("warning") or "").rstrip(".")
    reason = f" ({warning[:1].lower()}{warning[1:]})" if warning else ""
    return f"this password is among the common ones attackers try first{reason}: use three or four unrelated words"


def _squash(text: str) -> str:
    return _NOT_ALNUM.sub("", text.lower())
