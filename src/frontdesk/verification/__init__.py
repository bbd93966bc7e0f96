"""Verification: the claims a reply files, and the gate that audits them before anything ships."""

from frontdesk.verification.claims import CLAIM_TYPES, Claim
from frontdesk.verification.gate import Failure, ImageGroup, ReplyContent, Verdict, companion_failures, verify

__all__ = [
    "CLAIM_TYPES",
    "Claim",
    "Failure",
    "ImageGroup",
    "ReplyContent",
    "Verdict",
    "companion_failures",
    "verify",
]
