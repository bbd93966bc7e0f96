"""A bad reply becomes a test: "save as scenario" on an AI turn, the tenant's saved scenarios,
and the owner's download of a file (it leaves the tenant only that way)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from frontdesk.errors import ForbiddenError, PayloadError
from frontdesk.humans.console._deps import ConsoleDeps
from frontdesk.humans.console._forms import form_values, typed
from frontdesk.humans.console._guard import actor, redirect, viewer
from frontdesk.humans.console._render import page, parse_form
from frontdesk.humans.console.auth import Principal
from frontdesk.humans.console.csrf import read_form
from frontdesk.humans.console.pages_threads import ConversationPath
from frontdesk.humans.console.scenario_file import Correction, RecordedTurn, reply_text
from frontdesk.humans.console.scenarios import flagged_turn, get_scenario, list_scenarios, save_scenario
from frontdesk.output.blocks import MAX_TEXT_CHARS

MAX_NOTE_CHARS = 2000
RowId = Annotated[int, Path(ge=1, le=2**62)]


class ScenarioForm(BaseModel):
    """``note``: what the reply should have done; ``reply``: the reply it should have sent."""

    model_config = ConfigDict(frozen=True)
    note: str = Field(min_length=1, max_length=MAX_NOTE_CHARS)
    reply: str = Field(min_length=1, max_length=MAX_TEXT_CHARS * 4)

    @field_validator("note", "reply")
    @classmethod
    def _written(cls, value: str) -> str:
        return typed(value, "write it")


def add_routes(router: APIRouter, deps: ConsoleDeps) -> None:
    @router.get("/console/conversations/{conversation_id}/turns/{turn_id}/scenario", response_class=HTMLResponse)
    async def form(request: Request, conversation_id: ConversationPath, turn_id: RowId) -> Response:
        me = await viewer(deps, request)
        turn = await flagged_turn(deps, me, conversation_id, turn_id)
        return _form_page(me, conversation_id, turn, note="", reply=reply_text(turn.blocks, images=False))

    @router.post("/console/conversations/{conversation_id}/turns/{turn_id}/scenario")
    async def save(request: Request, conversation_id: ConversationPath, turn_id: RowId) -> Response:
        me = await actor(deps, request)
        try:
            form = await parse_form(request, ScenarioForm)
            saved = await save_scenario(deps, me, conversation_id, turn_id, Correction(form.note, form.reply))
        except PayloadError as exc:  # shown again with what they wrote, and why
            turn = await flagged_turn(deps, me, conversation_id, turn_id)
            values = form_values(await read_form(request))
            note, reply = values.get("note", ""), values.get("reply", "")
            return _form_page(me, conversation_id, turn, note=note, reply=reply, error=exc.message, status=422)
        raise redirect(f"/console/scenarios#scenario-{saved.id}")

    @router.get("/console/scenarios", response_class=HTMLResponse)
    async def scenarios(request: Request) -> Response:
        me = await viewer(deps, request)
        return page("scenarios.html", me, rows=await list_scenarios(deps, me))

    @router.get("/console/scenarios/{scenario_id}.yaml")
    async def download(request: Request, scenario_id: RowId) -> Response:
        me = await viewer(deps, request)
        row = await get_scenario(deps, me, scenario_id)
        if not me.is_owner:
            raise ForbiddenError("only an owner can download a scenario: the file leaves the business")
        return Response(
            row.content,
            media_type="application/yaml; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="scenario-{row.id}.yaml"'},
        )


def _form_page(
    me: Principal,
    conversation_id: str,
    turn: RecordedTurn,
    *,
    note: str,
    reply: str,
    error: str = "",
    status: int = 200,
) -> Response:
    return page(
        "scenario_form.html",
        me,
        status=status,
        conversation_id=conversation_id,
        turn=turn,
        sent=reply_text(turn.blocks),
        note=note,
        reply=reply,
        error=error,
    )
