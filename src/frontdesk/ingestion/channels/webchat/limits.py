"""How fast a web chat may be written to: token buckets per session, per client address and per
account, so nobody can run up a business's model bill by posting in a loop.

Each bucket holds ``per_minute`` tokens, refills at ``per_minute`` a minute, and a message takes
one token from each of its three buckets, or from none when one is empty (the answer is then a
429 whose ``Retry-After`` says when the emptiest will have a token again). The buckets live in
this process's memory: with several instances behind a load balancer, a client can get up to
that many times the limit (sticky sessions make it once). That is the price of checking a limit
without a database write on every message; the per-tenant model budget is what bounds the bill.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field

# Buckets kept per kind; the least recently used go first (a full bucket carries no state worth
# keeping, and a flood of new keys must not grow memory without bound).
MAX_BUCKETS = 50_000


@dataclass(frozen=True)
class WebchatRates:
    """Messages a minute (and the burst allowed at once) per session, client address and account."""

    per_session: int = 12
    per_ip: int = 60
    per_account: int = 600


class _Buckets:
    def __init__(self, per_minute: int) -> None:
        self.capacity = float(per_minute)
        self.refill_per_s = per_minute / 60.0
        self.levels: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)

    def level(self, key: str, now: float) -> float:
        tokens, at = self.levels.get(key, (self.capacity, now))
        return min(self.capacity, tokens + (now - at) * self.refill_per_s)

    def wait_s(self, key: str, now: float) -> float:
        """Seconds until ``key`` has a token (0: it has one now)."""
        missing = 1.0 - self.level(key, now)
        return 0.0 if missing <= 0 else missing / self.refill_per_s

    def take(self, key: str, now: float) -> None:
        self.levels[key] = (self.level(key, now) - 1.0, now)
        self.levels.move_to_end(key)
        while len(self.levels) > MAX_BUCKETS:
            self.levels.popitem(last=False)


@dataclass
class WebchatLimits:
    rates: WebchatRates = field(default_factory=WebchatRates)

    def __post_init__(self) -> None:
        self._kinds = (
            _Buckets(self.rates.per_session),
            _Buckets(self.rates.per_ip),
            _Buckets(self.rates.per_account),
        )

    def admit(self, account_id: str, session: str, client_ip: str, *, now: float) -> int:
        """Take one message's tokens: 0 when admitted, else the whole seconds to wait (nothing taken)."""
        keys = (f"{account_id}\x00{session}", client_ip, account_id)
        wait = max(buckets.wait_s(key, now) for buckets, key in zip(self._kinds, keys, strict=True))
        if wait > 0:
            return max(1, math.ceil(wait))
        for buckets, key in zip(self._kinds, keys, strict=True):
            buckets.take(key, now)
        return 0
