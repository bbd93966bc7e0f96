"""Confirmation-gated actions: proposed in one turn, run in a later one only after the user said yes.

A tool whose policy has ``requires_confirmation`` (adjust a member's points, revoke a voucher,
activate a campaign) is not run on the turn that asks for it. On that turn the catalog offers a
*proposal* of it: the same name and schema, so the model fills in the arguments as usual, but the
call only validates them and records them as the conversation's pending action (a durable draft
in ``workflows``, phase ``confirm``). The model then shows the user what will happen and asks.

On the next message the router sees the ``confirm`` phase. A "yes" carries the ``confirmed``
signal, which unlocks ``confirm_pending_action``: it runs *the recorded call*, with the recorded
arguments, once (the draft id is the idempotency key, on our side and, when the tool takes one, on
the service's side). What runs is exactly what the user was shown; the model cannot change an
argument between the question and the answer. A "no" unlocks ``cancel_pending_action``. Anything
else is routed as a new request; the proposal stays until it expires or a new one replaces it.

A proposal never proves that something happened: its result carries no event, so a reply that
claims the change was made is refused by the verification gate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from frontdesk.capabilities.policy import PENDING_CONFIRMATION_PHASE, ToolPolicy
from frontdesk.capabilities.tools import Tool, ToolContext, ToolEvidence, ToolFailure, ToolResult
from frontdesk.platform.ids import ConversationId
from frontdesk.workflows import Draft, SubmitPending, WorkflowStore

PENDING_WORKFLOW = "confirmation.pending_action"
CONFIRMATION_DOMAIN = "confirmation"
CONFIRM_TOOL = "confirm_pending_action"
CANCEL_TOOL = "cancel_pending_action"
PROPOSAL_TTL_S = 30 * 60  # a "yes" much later than the question is not an answer to it
IDEMPOTENCY_FIELD = "idempotency_key"
NOTHING_PENDING = "nothing is waiting for a confirmation (it may have expired): ask again"


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


def arguments_json(arguments: BaseModel) -> dict[str, Any]:
    """Validated arguments as the JSON they will be run with (MCP arguments keep their own keys)."""
    as_arguments = getattr(arguments, "as_arguments", None)
    if callable(as_arguments):
        given: dict[str, Any] = as_arguments()
        return given
    return arguments.model_dump(mode="json", exclude_unset=True)


@dataclass(frozen=True)
class PendingActions:
    """Proposals and their confirmation, for one pack's tools (``resolve`` finds a tool by name)."""

    workflows: WorkflowStore
    resolve: Callable[[str], Tool | None]
    ttl_s: float = PROPOSAL_TTL_S

    def proposal(self, tool: Tool, policy: ToolPolicy) -> Tool:
        """``tool`` as offered before a confirmation: same name and schema, records instead of runs."""

        async def propose(arguments: BaseModel, context: ToolContext) -> ToolResult:
            conversation = ConversationId(context.conversation_id)
            await self._withdraw(conversation, context.turn_key)
            data = {
                "tool": tool.name,
                "arguments": arguments_json(arguments),
                "domains": sorted(policy.domains),
            }
            draft = await self.workflows.start(
                conversation,
                PENDING_WORKFLOW,
                owner=context.turn_key or "agent",
                data=data,
                phase=PENDING_CONFIRMATION_PHASE,
                ttl_s=self.ttl_s,
            )
            output = {
                "status": "awaiting confirmation",
                "not_done_yet": f"{tool.name} has NOT run. Describe exactly this change and ask the user to confirm.",
                "action": tool.name,
                "arguments": data["arguments"],
                "proposal_id": draft.id,
            }
            return ToolResult(output, state_key=PENDING_WORKFLOW)

        description = f"{tool.description} (Needs the user's confirmation: this records the request and asks.)"
        return Tool(tool.name, description, tool.input_model, propose, "retrieval", json_schema=tool.json_schema)

    def tools(self) -> list[Tool]:
        return [
            Tool(
                CONFIRM_TOOL,
                "Run the action the user just confirmed, exactly as proposed.",
                NoArguments,
                self.confirm,
                "action",
            ),
            Tool(CANCEL_TOOL, "Drop the proposed action the user declined.", NoArguments, self.cancel, "action"),
        ]

    @staticmethod
    def policies() -> dict[str, ToolPolicy]:
        only_when_pending = frozenset({PENDING_CONFIRMATION_PHASE})
        domains = frozenset({CONFIRMATION_DOMAIN})
        return {
            CONFIRM_TOOL: ToolPolicy(domains, "update", "high", only_when_pending, requires_confirmation=True),
            CANCEL_TOOL: ToolPolicy(domains, "update", phases=only_when_pending),
        }

    async def state(self, conversation_id: str) -> tuple[str, frozenset[str]] | None:
        """The router's view: phase ``confirm`` and the proposed action's domains, while one waits."""
        draft = await self.workflows.current(ConversationId(conversation_id), PENDING_WORKFLOW)
        if draft is None or draft.status != "open":
            return None
        return draft.phase, frozenset({CONFIRMATION_DOMAIN, *draft.data.get("domains", ())})

    async def confirm(self, arguments: NoArguments, context: ToolContext) -> ToolResult:
        draft = await self._to_confirm(ConversationId(context.conversation_id), context.turn_key)
        tool = self.resolve(str(draft.data.get("tool")))
        if tool is None:
            raise ToolFailure(f"the proposed action {draft.data.get('tool')!r} is no longer available")
        given = dict(draft.data.get("arguments") or {})
        if IDEMPOTENCY_FIELD in (tool.json_schema or {}).get("properties", {}) and IDEMPOTENCY_FIELD not in given:
            given[IDEMPOTENCY_FIELD] = draft.id  # a retry after an ambiguous failure is safe remotely too
        try:
            validated = tool.input_model.model_validate(given)
        except ValidationError as exc:
            raise ToolFailure(f"the proposed arguments are no longer valid: {exc.errors()[0]['msg']}") from None

        async def run(claimed: Draft) -> dict[str, Any]:
            result = await tool.handler(validated, context)
            if not isinstance(result, ToolResult):
                result = ToolResult(result)
            return {"output": result.output, "evidence": result.evidence.as_json()}

        outcome = await self.workflows.submit(draft.id, draft.version, draft.id, run, submitter=context.turn_key)
        if isinstance(outcome, SubmitPending):
            return ToolResult({"status": "being processed", "action": tool.name})
        evidence = ToolEvidence.from_json(outcome.result.get("evidence", {}))
        return ToolResult(outcome.result.get("output"), evidence)

    async def cancel(self, arguments: NoArguments, context: ToolContext) -> ToolResult:
        draft = await self._pending(ConversationId(context.conversation_id))
        await self.workflows.cancel(draft.id, draft.version)
        output = {"status": "cancelled", "action": draft.data.get("tool"), "not_done": True}
        return ToolResult(output, ToolEvidence(events=(("pending_action_cancelled", draft.id),)))

    async def _pending(self, conversation: ConversationId) -> Draft:
        draft = await self.workflows.current(conversation, PENDING_WORKFLOW)
        if draft is None or draft.status != "open":
            raise ToolFailure(NOTHING_PENDING)
        return draft

    async def _to_confirm(self, conversation: ConversationId, turn_key: str) -> Draft:
        """The open proposal, or the one this run already confirmed: a repeated confirmation (two
        parallel calls, or once more after the answer) gets the first result, and runs nothing."""
        draft = await self.workflows.current_or_submitted_by(conversation, PENDING_WORKFLOW, turn_key)
        # Nothing proposed, or another run is confirming it.
        if draft is None or not (draft.status == "open" or (turn_key and draft.owner == turn_key)):
            raise ToolFailure(NOTHING_PENDING)
        return draft

    async def _withdraw(self, conversation: ConversationId, turn_key: str) -> None:
        """A new proposal replaces an unanswered one from an earlier turn (only the latest
        question can be answered); two in one turn would leave the user one question for two."""
        draft = await self.workflows.current(conversation, PENDING_WORKFLOW)
        if draft is None or draft.status != "open":
            return
        if turn_key and draft.owner == turn_key:
            raise ToolFailure(
                f"{draft.data.get('tool')} is already waiting for the user's confirmation: ask about that one first"
            )
        await self.workflows.cancel(draft.id, draft.version)
