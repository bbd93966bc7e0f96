"""Creating or changing a rule in small steps (staged command DTOs) instead of one ~2,500-token tool.

start (campaign, name) → choose the formula type → set *that type's* fields → set criteria →
review → submit (confirmed). Each step is a small tool, offered only in its phase: the schema of
a formula type's setter exists in a turn only once that type was chosen (phase
``formula:<type>``). Changing a rule is the same flow entered at review: ``rule_draft_edit``
loads the rule into a draft, the steps change what the user asks for (``rule_draft_details``
for name, priority, status), and the submit replaces the rule. The draft lives in ``workflows``
(durable, compare-and-set, one per conversation; the workflow id predates edits), so a restart
mid-flow loses nothing; the submit calls the service's ``rule_create`` once per draft (the draft
id is the idempotency key on both sides) or ``rule_update`` (a replacement, idempotent itself).

Fields the user did not give are never filled in here: a setter's required fields are
required, and a validation failure names what is missing so the agent asks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, create_model

from frontdesk.capabilities.policy import ToolPolicy
from frontdesk.capabilities.tools import Tool, ToolContext, ToolEvidence, ToolFailure, ToolResult
from frontdesk.packs.loyalty.evidence import loyalty_evidence
from frontdesk.packs.loyalty.server.models import FORMULA_MODELS, FormulaType, RuleCriteria
from frontdesk.platform.ids import ConversationId
from frontdesk.workflows import Draft, SubmitPending, WorkflowStore

WORKFLOW = "loyalty.create_rule"
CHOOSE_TYPE, CRITERIA, REVIEW = "formula_type", "criteria", "review"
FORMULA_TYPES: tuple[str, ...] = get_args(FormulaType)
FORMULA_PHASES = frozenset(f"formula:{t}" for t in FORMULA_TYPES)
FLOW_PHASES = frozenset({CHOOSE_TYPE, CRITERIA, REVIEW}) | FORMULA_PHASES
DRAFT_TTL_S = 6 * 3600
NO_DRAFT = "no rule is being created in this conversation; start one with rule_draft_start"
RULE_DETAILS = ("name", "description", "priority", "stackable", "status")
# The service's whole-rule writes, and the flow steps through which a turn reaches them.
STAGED_BY = {
    "rule_create": ("rule_draft_start", "rule_draft_submit"),
    "rule_update": ("rule_draft_edit", "rule_draft_submit"),
}

ServiceCall = Callable[[str, Mapping[str, Any]], Awaitable[Any]]  # an MCP tool call by name


class StartRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    campaign_id: str = Field(description="The campaign the rule belongs to (e.g. cmp_0003)")
    name: str = Field(min_length=3, max_length=120, description="Rule name shown to staff")
    description: str = Field(default="", max_length=1000)
    priority: int = Field(default=100, ge=0, le=1000)
    stackable: bool = Field(default=True)


class EditRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rule_id: str = Field(description="The rule to change (e.g. rul_0007)")


class SetDetails(BaseModel):
    """Only the fields the user asked to change; the others keep their values."""

    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=3, max_length=120)
    description: str | None = Field(default=None, max_length=1000)
    priority: int | None = Field(default=None, ge=0, le=1000)
    stackable: bool | None = None
    status: Literal["active", "inactive"] | None = None


class ChooseFormula(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: FormulaType = Field(description="One of the 8 formula types")


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _setter_model(formula_type: str) -> type[BaseModel]:
    """The formula model without its ``type`` (the phase already says which)."""
    base = FORMULA_MODELS[formula_type]
    fields: dict[str, Any] = {n: (info.annotation, info) for n, info in base.model_fields.items() if n != "type"}
    model: type[BaseModel] = create_model(
        f"Set_{formula_type}", __config__=ConfigDict(extra="forbid"), __doc__=base.__doc__, **fields
    )
    return model


@dataclass(frozen=True)
class RuleFlow:
    workflows: WorkflowStore
    service: ServiceCall

    def tools(self) -> list[Tool]:
        tools = [
            Tool("rule_draft_start", "Start creating a rule in a campaign (the first step).", StartRule, self.start),
            Tool(
                "rule_draft_edit",
                "Start changing an existing rule (loads it into a draft to review and edit).",
                EditRule,
                self.edit,
            ),
            Tool("rule_draft_details", "Change the draft rule's name, priority or status.", SetDetails, self.details),
            Tool("rule_draft_choose_formula", "Choose the new rule's formula type.", ChooseFormula, self.choose),
            Tool("rule_draft_set_criteria", "Set when the new rule applies.", RuleCriteria, self.criteria),
            Tool("rule_draft_review", "Show the new rule as it will be created.", NoArguments, self.review),
            Tool(
                "rule_draft_submit", "Create the rule (after the user confirmed).", NoArguments, self.submit, "action"
            ),
            Tool("rule_draft_cancel", "Abandon the rule being created.", NoArguments, self.cancel, "action"),
        ]
        for formula_type in FORMULA_TYPES:
            description = f"Set the new rule's {formula_type} formula. {FORMULA_MODELS[formula_type].__doc__ or ''}"
            tools.append(
                Tool(
                    f"rule_draft_set_{formula_type}",
                    description.strip(),
                    _setter_model(formula_type),
                    self._setter(formula_type),
                )
            )
        return tools

    async def _draft(self, context: ToolContext) -> Draft:
        draft = await self.workflows.current(ConversationId(context.conversation_id), WORKFLOW)
        if draft is None:
            raise ToolFailure(NO_DRAFT)
        return draft

    async def start(self, arguments: StartRule, context: ToolContext) -> ToolResult:
        campaign = await self.service("campaign_get", {"campaign_id": arguments.campaign_id})
        draft = await self.workflows.start(
            ConversationId(context.conversation_id),
            WORKFLOW,
            owner=context.turn_key or "agent",
            data={"rule": arguments.model_dump(exclude={"campaign_id"}), "campaign_id": arguments.campaign_id},
            phase=CHOOSE_TYPE,
            ttl_s=DRAFT_TTL_S,
        )
        types = await self.service("rule_list_formula_types", {})
        return _result(draft, {"campaign": campaign, "formula_types": types, "next": "choose a formula type"})

    async def edit(self, arguments: EditRule, context: ToolContext) -> ToolResult:
        found = await self.service("rule_get", {"rule_id": arguments.rule_id})
        rule = found.get("rule", {}) if isinstance(found, dict) else {}
        draft = await self.workflows.start(
            ConversationId(context.conversation_id),
            WORKFLOW,
            owner=context.turn_key or "agent",
            data={
                "rule_id": arguments.rule_id,
                "campaign_id": rule.get("campaign_id"),
                "rule": {key: rule[key] for key in RULE_DETAILS if key in rule},
                "formula": rule.get("formula"),
                "criteria": rule.get("criteria") or {},
            },
            phase=REVIEW,
            ttl_s=DRAFT_TTL_S,
        )
        return _result(draft, {"rule": _definition(draft), "next": "ask what to change"})

    async def details(self, arguments: SetDetails, context: ToolContext) -> ToolResult:
        draft = await self._draft(context)
        changes = arguments.model_dump(exclude_none=True)
        if not changes:
            raise ToolFailure("name at least one field to change")
        rule = {**draft.data.get("rule", {}), **changes}
        draft = await self.workflows.update(draft.id, draft.version, data_changes={"rule": rule})
        return _result(draft, {"rule": _definition(draft)})

    async def choose(self, arguments: ChooseFormula, context: ToolContext) -> ToolResult:
        draft = await self._draft(context)
        draft = await self.workflows.update(
            draft.id, draft.version, phase=f"formula:{arguments.type}", data_changes={"formula": None}
        )
        return _result(draft, {"next": f"ask for the {arguments.type} fields the user has not given"})

    def _setter(self, formula_type: str) -> Callable[[BaseModel, ToolContext], Awaitable[ToolResult]]:
        async def set_formula(arguments: BaseModel, context: ToolContext) -> ToolResult:
            draft = await self._draft(context)
            if draft.phase != f"formula:{formula_type}":
                raise ToolFailure(f"the chosen formula type is not {formula_type}; choose it first")
            fields = arguments.model_dump(mode="json")
            checked = await self.service("rule_validate_formula", {"type": formula_type, "fields": fields})
            if not (isinstance(checked, dict) and checked.get("ok")):
                raise ToolFailure(f"the formula is not valid: {checked}")
            draft = await self.workflows.update(
                draft.id, draft.version, phase=CRITERIA, data_changes={"formula": {"type": formula_type, **fields}}
            )
            return _result(draft, {"next": "ask when the rule applies (criteria), or set no restriction"})

        return set_formula

    async def criteria(self, arguments: RuleCriteria, context: ToolContext) -> ToolResult:
        draft = await self._draft(context)
        if draft.phase not in (CRITERIA, REVIEW):
            raise ToolFailure("set the formula before the criteria")
        criteria = arguments.model_dump(mode="json", exclude_defaults=True)
        checked = await self.service("rule_validate_criteria", {"criteria": criteria})
        if not (isinstance(checked, dict) and checked.get("ok")):
            raise ToolFailure(f"the criteria are not valid: {checked}")
        draft = await self.workflows.update(draft.id, draft.version, phase=REVIEW, data_changes={"criteria": criteria})
        return _result(draft, {"next": "show the rule and ask the user to confirm"})

    async def review(self, arguments: NoArguments, context: ToolContext) -> ToolResult:
        draft = await self._draft(context)
        return _result(draft, {"rule": _definition(draft)})

    async def _draft_to_submit(self, context: ToolContext) -> Draft:
        """The live draft, or the one this run already submitted: a repeated submit (two parallel
        calls, or once more after the answer) is answered with the first result."""
        conversation = ConversationId(context.conversation_id)
        draft = await self.workflows.current_or_submitted_by(conversation, WORKFLOW, context.turn_key)
        if draft is None:
            raise ToolFailure(NO_DRAFT)
        return draft

    async def submit(self, arguments: NoArguments, context: ToolContext) -> ToolResult:
        draft = await self._draft_to_submit(context)
        if draft.phase != REVIEW and draft.status == "open":
            raise ToolFailure("the rule is not complete yet; finish the formula and criteria first")

        editing = draft.data.get("rule_id")

        async def save(claimed: Draft) -> dict[str, Any]:
            if editing:  # a replacement is idempotent by nature: the same definition twice is one state
                saved = await self.service("rule_update", {"rule_id": editing, **_definition(claimed)})
            else:
                saved = await self.service(
                    "rule_create",
                    {"campaign_id": claimed.data["campaign_id"], **_definition(claimed), "idempotency_key": claimed.id},
                )
            return saved if isinstance(saved, dict) else {"result": saved}

        outcome = await self.workflows.submit(draft.id, draft.version, draft.id, save, submitter=context.turn_key)
        if isinstance(outcome, SubmitPending):
            return ToolResult({"status": "being saved", "draft_id": draft.id})
        saved_rule = outcome.result.get("rule")
        rule_id = str(editing or (saved_rule.get("id") if isinstance(saved_rule, dict) else "") or "")
        event = "rule_updated" if editing else "rule_created"
        status = "updated" if editing else "created"
        output = {"status": status, "rule": outcome.result}
        shown = loyalty_evidence("rule_draft_submit", {}, output)
        evidence = ToolEvidence(
            references=shown.references | ({rule_id} - {""}), prices=shown.prices, events=((event, rule_id or None),)
        )
        return ToolResult(output, evidence, state_key=WORKFLOW)

    async def cancel(self, arguments: NoArguments, context: ToolContext) -> ToolResult:
        draft = await self._draft(context)
        await self.workflows.cancel(draft.id, draft.version)
        return ToolResult({"status": "cancelled"}, ToolEvidence(events=(("rule_draft_cancelled", draft.id),)))


def _definition(draft: Draft) -> dict[str, Any]:
    return {**draft.data.get("rule", {}), "formula": draft.data.get("formula"), "criteria": draft.data.get("criteria")}


def _result(draft: Draft, extra: Mapping[str, Any]) -> ToolResult:
    """A step's answer; the draft's amounts and ids are evidence (a review may quote them)."""
    output = {"draft_id": draft.id, "phase": draft.phase, **extra}
    return ToolResult(output, loyalty_evidence("rule_draft", {}, output), state_key=WORKFLOW)


def flow_policies() -> dict[str, ToolPolicy]:
    """Each step only in its phase; the submit also needs the user's confirmation."""

    def step(operation: Literal["create", "update", "read"], phases: frozenset[str], **extra: Any) -> ToolPolicy:
        return ToolPolicy(frozenset({"rule"}), operation, phases=phases, **extra)

    policies = {
        "rule_draft_start": step("create", frozenset({"idle"}), actions=frozenset({"create"}), family="create"),
        "rule_draft_edit": step("update", frozenset({"idle"}), actions=frozenset({"update"}), family="update"),
        "rule_draft_details": step("update", FLOW_PHASES),
        "rule_draft_choose_formula": step("update", FLOW_PHASES),
        "rule_draft_set_criteria": step("update", frozenset({CRITERIA, REVIEW})),
        "rule_draft_review": step("read", FLOW_PHASES),
        "rule_draft_submit": step("create", frozenset({REVIEW}), risk="medium", requires_confirmation=True),
        "rule_draft_cancel": step("update", FLOW_PHASES),
    }
    for formula_type in FORMULA_TYPES:
        policies[f"rule_draft_set_{formula_type}"] = step("update", frozenset({f"formula:{formula_type}"}))
    return policies
