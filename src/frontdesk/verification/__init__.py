"""Verification: the claims a reply files, and the gate that audits them before anything ships."""

from frontdesk.verification.claims import CLAIM_TYPES, Claim
from frontdesk.verification.gate import (
    COMPANION_RULES,
    Failure,
    ImageGroup,
    ReplyContent,
    Verdict,
    companion_failures,
    verify,
)

__all__ = [
    "CLAIM_TYPES",
    "COMPANION_RULES",
    "Claim",
    "Failure",
    "ImageGroup",
    "ReplyContent",
    "Verdict",
    "companion_failures",
    "verify",
]
