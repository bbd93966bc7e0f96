"""Errors a caller can fix, raised by the domain and turned into MCP tool errors in ``app.py``.

    LoyaltyError                the caller's request cannot be carried out as asked
    ├── NotFoundError           an id or code that does not exist
    ├── StateError              an invalid state transition (activate an ended campaign, ...)
    ├── InsufficientPointsError a debit larger than the member's balance
    └── ConflictError           a duplicate (phone, voucher code) or a reused idempotency key

Anything else raised by a tool is a bug of this service and reaches the caller as a generic error.
"""

from __future__ import annotations


class LoyaltyError(Exception):
    """A request the caller can correct; the message says how."""


class NotFoundError(LoyaltyError):
    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} {key!r} not found")


class StateError(LoyaltyError):
    pass


class InsufficientPointsError(LoyaltyError):
    def __init__(self, member_id: str, balance: int, wanted: int) -> None:
        super().__init__(f"member {member_id} has {balance} points, {wanted} needed; balances never go negative")


class ConflictError(LoyaltyError):
    pass
