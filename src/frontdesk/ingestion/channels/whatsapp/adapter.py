"""Placeholder until the whatsapp webhook lands: no routes yet."""

from __future__ import annotations

from fastapi import APIRouter

from frontdesk.ingestion.channels._deps import ChannelDeps


def build_router(deps: ChannelDeps) -> APIRouter:
    return APIRouter(tags=["whatsapp"])
