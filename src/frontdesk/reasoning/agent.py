"""The reasoning entry point: a ``Turn`` in, an ``AgentRun`` out.

Per turn, given the conversation's context (read by ``turns/``): route the batch, derive the tool
bundle from the pack's policy catalog, select the pack's reference notes for the route, assemble
the prompt (static prefix, history within the chat slot's memory budget, dynamic tail), run the
bounded loop with the verification gate, tool results shrunk to the budget's tool-result reserve.
It writes nothing of the turn: what the run learned (the ledgers' new entries, refused drafts,
whether memory is due) is in the ``AgentRun`` it returns, and ``turns/`` commits it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, Protocol

from pydantic_ai import BinaryContent

from frontdesk.capabilities.policy import RoutingDecision, ToolPolicyCatalog
from frontdesk.capabilities.tools import ToolContext
from frontdesk.context.budget import BudgetConfig
from frontdesk.context.conversation import ConversationContext
from frontdesk.context.episodic import EpisodicCadence
from frontdesk.context.identity import IdentityPolicy, merge_policy, prefix_hash, static_prefix, tenant_playbooks
from frontdesk.context.knowledge import KnowledgeRegistry
from frontdesk.context.ledgers import WorkingState
from frontdesk.context.truncation import ResultAllowance
from frontdesk.errors import ConfigError, ModelAPIError, NotFoundError
from frontdesk.output.blocks import text_blocks
from frontdesk.platform.clock import Clock
from frontdesk.platform.media import LEGACY_KEY_PATTERN, MediaStore, tenant_prefix
from frontdesk.platform.model_budget import Spent
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.observability import stage
from frontdesk.platform.observability.tracing import ROUTE
from frontdesk.reasoning.binding import Bindings
from frontdesk.reasoning.loop import FALLBACK_TEXT, GenerationResult, LoopLimits, Outcome, run_generation
from frontdesk.reasoning.prompt import build_prompt, dynamic_tail
from frontdesk.reasoning.router import RouterState
from frontdesk.reasoning.terminal import reply_tool_definition
from frontdesk.reasoning.turn import Turn, TurnMessage

log = logging.getLogger(__name__)

MAX_IMAGES_PER_TURN = 4
UNCONFIRMED_VOICE_CONFIDENCE = 0.5  # below the catalog's write threshold
VOICE_FAILED_TEXT = "Sorry, I couldn't make out your voice message. Could you type it for me?"
# Reference notes per turn: a fixed ceiling, so a pack's growing knowledge never eats the history.
KNOWLEDGE_TOKEN_CAP = 400


@dataclass(frozen=True)
class AgentPack:
    """What the agent needs from a business pack (built from the pack by the composition root)."""

    name: str
    catalog: ToolPolicyCatalog
    router: TurnRouter
    default_policy: Mapping[str, Any]
    playbook: str
    # The playbook for a small model (``chat_prompt_style``); None: the same playbook.
    compact_playbook: str | None = None
    fallback_texts: Mapping[str, str] = field(default_factory=dict)
    voice_failed_texts: Mapping[str, str] = field(default_factory=dict)
    outcome_texts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    courtesy_texts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # The conversation's open multi-step flow, if the pack has flows: (phase, domains).
    flow_state: FlowState | None = None
    # Reviewed snippets offered by route (advisory text for the model, never evidence for the gate).
    knowledge: KnowledgeRegistry | None = None
    # What the tenant's own data changes in its turns (its items' words, its item index...).
    for_tenant: TenantView | None = None


class TurnRouter(Protocol):
    def route(self, text: str, state: RouterState) -> RoutingDecision: ...


@dataclass(frozen=True)
class TenantTurnView:
    """A pack as one tenant's data shapes it: a router that knows the tenant's items, lines the
    playbook gains, and defaults that sit under the owner's own policy edits."""

    router: TurnRouter
    playbook_lines: str = ""
    policy_defaults: Mapping[str, Any] = field(default_factory=dict)
    item_words: Mapping[str, Sequence[str]] = field(default_factory=dict)
    hold_texts: Mapping[str, str] = field(default_factory=dict)
    data_languages: frozenset[str] = frozenset()


FlowState = Callable[[str], Awaitable[tuple[str, frozenset[str]] | None]]
# (tenant id, its data revision when the caller has read it) -> the view
TenantView = Callable[[str, int | None], Awaitable[TenantTurnView]]


class ModelOutage(Exception):
    """The chat model failed in a way that may pass (a timeout, 429, 5xx) before the turn did
    anything. The caller may run the turn again later; ``hold`` is what to send if it cannot: the
    pack's hold message in the customer's language, with the turn's route for the trace."""

    def __init__(self, error: ModelAPIError, hold: AgentRun) -> None:
        super().__init__(str(error))
        self.error = error
        self.hold = hold


@dataclass
class AgentRun:
    result: GenerationResult
    route: dict[str, Any] = field(default_factory=dict)
    tools_offered: list[str] = field(default_factory=list)
    prefix_hash: str | None = None
    prompt_size: dict[str, int] = field(default_factory=dict)
    state: WorkingState | None = None
    memory_due: bool = False
    # Set when the tenant's model budget was spent and the turn held without the model.
    budget_spent: Spent | None = None


def _introduced(router: TurnRouter, history: Sequence[TurnMessage]) -> bool:
    """Whether an earlier customer message gave the customer's name (the router's reading)."""
    return any(
        "introduction" in router.route(m.text, RouterState()).signals for m in history if m.role == "user" and m.text
    )


def understood_nothing(batch: Sequence[TurnMessage]) -> bool:
    """Every message is a voice note nobody could transcribe: the turn asks to repeat it, without
    the model (so it claims none of the model's budget)."""
    return bool(batch) and all(m.transcript_quality == "failed" for m in batch)


class Agent:
    def __init__(
        self,
        gateway: ModelGateway,
        clock: Clock,
        limits: LoopLimits,
        packs: Mapping[str, AgentPack],
        cadence: EpisodicCadence | None = None,
        media: MediaStore | None = None,
        budget: BudgetConfig | None = None,
    ) -> None:
        self._gateway = gateway
        self._clock = clock
        self._limits = limits
        self._packs = packs
        self._cadence = cadence or EpisodicCadence()
        self._media = media
        self._budget = budget or BudgetConfig()

    @property
    def model_name(self) -> str:
        return self._gateway.client("chat").name

    def zone_of(self, pack: str, policy_overrides: Mapping[str, Any]) -> tzinfo:
        """The tenant's clock as its turns' policy has it (the owner's setting, else the pack's
        default; a tenant view adds no zone): the model budget's windows follow it."""
        return merge_policy(self.pack(pack).default_policy, policy_overrides).zone

    def pack(self, name: str) -> AgentPack:
        try:
            return self._packs[name]
        except KeyError:
            raise ConfigError(f"unknown pack {name!r} (known: {', '.join(self._packs)})") from None

    async def generate(self, turn: Turn, context: ConversationContext, *, spent: Spent | None = None) -> AgentRun:
        """The answer to ``turn`` in its conversation's ``context`` (read by the caller). ``spent``:
        the tenant's model budget is spent (the caller claimed it), so the turn is held without
        the model."""
        now = self._clock.now()
        pack = self.pack(context.pack)
        if understood_nothing(turn.batch):
            # Nothing was understood: guessing would be worse than asking (no model call).
            language = context.likely_language
            text = pack.voice_failed_texts.get(language, VOICE_FAILED_TEXT)
            result = GenerationResult(Outcome.FALLBACK, text_blocks(text), detail="voice note not understood")
            return AgentRun(result, route={"intent": "voice_not_understood", "language": language})
        view = await pack.for_tenant(context.tenant_id, context.data_revision) if pack.for_tenant else None
        router = view.router if view is not None else pack.router
        defaults = {**pack.default_policy, **(view.policy_defaults if view is not None else {})}
        policy = merge_policy(defaults, context.policy_overrides)
        state = context.ledgers
        # Where the customer's own phone numbers and e-mails are: what they wrote (this turn and the
        # history the model reads) and their saved details. A reply may repeat those back.
        said = [m.text for m in (*turn.history, *turn.batch) if m.role == "user"]
        state.customer_contacts = (*said, *(c for c in (context.contact.phone, context.contact.email) if c))
        bindings = Bindings.of(state.customer_contacts, view.item_words if view is not None else {}, turn.batch_text)
        # The rest of the gate's closed world: what the owner wrote, the business's clock, and
        # the names of its items (a photo captioned with an item's name must show that item).
        state.policy_texts = tuple(t for t in (policy.business_description,) if t)
        state.timezone = policy.timezone
        state.item_words = view.item_words if view is not None else {}
        state.data_languages = view.data_languages if view is not None else frozenset()
        with stage(ROUTE, {"frontdesk.pack": pack.name}) as route_span:
            flow = await pack.flow_state(turn.conversation_id) if pack.flow_state is not None else None
            decision = router.route(
                turn.batch_text,
                RouterState(
                    item_in_context=any(e.evidence.references for e in state.tool),
                    open_follow_up=context.open_follow_up,
                    preferred_language=context.likely_language,
                    workflow_phase=flow[0] if flow else None,
                    workflow_domains=flow[1] if flow else frozenset(),
                    # Named when saved, or when the customer said their name earlier in the
                    # history the model reads ("Soy Lucía", then the order): the model has it.
                    contact_named=bool(context.contact.name) or _introduced(router, turn.history),
                    contact_given=bool(bindings.phones or bindings.emails),
                ),
            )
            if any(m.transcript_quality == "uncertain" for m in turn.batch):
                # Words the transcriber was unsure of are not a basis for saving or changing anything:
                # this turn gets read-only tools, and the prompt tells the model to confirm them first.
                decision = dataclasses.replace(
                    decision,
                    confidence=min(decision.confidence, UNCONFIRMED_VOICE_CONFIDENCE),
                    signals=(*decision.signals, "voice_unconfirmed"),
                )
            bundle = pack.catalog.bundle(decision, turn.batch_text)
            state.tool_names = frozenset(t.name for t in bundle.tools)
            route_span.set_attributes(
                {
                    "frontdesk.intent": decision.intent,
                    "frontdesk.confidence": decision.confidence,
                    "frontdesk.tools_offered": len(bundle.tools),
                }
            )
        budget = self._budget.for_model(self.model_name)
        prefix = self._prefix(pack, view, turn.business_name, policy)
        # A small model reads no reference notes: they are advice, and it follows advice poorly
        # while every token of prompt costs it seconds on a CPU.
        knowledge = None if budget.compact else pack.knowledge
        notes = knowledge.select(decision, KNOWLEDGE_TOKEN_CAP) if knowledge is not None else []
        now_local = now.astimezone(policy.zone)
        tail = dynamic_tail(now_local, context, decision, bundle.tool_names, notes, compact=budget.compact)
        definitions = [*(t.definition() for t in bundle.tools), reply_tool_definition()]
        images = await self._images(turn)
        prompt = build_prompt(turn, prefix, prefix_hash(prefix), tail, definitions, images, budget)
        if prompt.size["tool_schema_tokens"] > budget.tool_schema_budget:
            # Not refused (the turn still works, with less history): tests gate this per pack.
            log.warning(
                "tool schemas of route %s take %d tokens, over the budget of %d",
                decision.intent,
                prompt.size["tool_schema_tokens"],
                budget.tool_schema_budget,
            )
        tool_context = ToolContext(
            tenant_id=turn.tenant_id,
            conversation_id=turn.conversation_id,
            channel_account_id=turn.channel_account_id,
            turn_key=turn.run_key,
            customer_language=decision.language,
            decision=decision,
            customer_message=turn.batch_text,
        )
        state.language = decision.language
        # A small model on the compact prompt wrote the customer's message back as its reply; the
        # gate holds it to answering (hosted models are not held to it: scripts echo on purpose).
        state.customer_message = turn.batch_text if budget.compact else ""
        held_by = view.hold_texts if view is not None else {}
        fallback_text = held_by.get(decision.language) or pack.fallback_texts.get(decision.language, FALLBACK_TEXT)
        outcome_texts = {
            event: texts[decision.language] for event, texts in pack.outcome_texts.items() if decision.language in texts
        }
        courtesy_texts = {
            event: texts[decision.language]
            for event, texts in pack.courtesy_texts.items()
            if decision.language in texts
        }
        if spent is not None:
            # The pack's hold, without the model: the commit opens the task and tells the owner.
            detail = (
                f"model budget spent: {spent.limit} turns this {spent.period}, until {spent.window.end.isoformat()}"
            )
            held = GenerationResult(Outcome.FALLBACK, text_blocks(fallback_text), detail=detail, hold=True)
            route = {**decision.as_json(), "model_budget": spent.period}
            return AgentRun(held, route, bundle.tool_names, prompt.prefix_hash, prompt.size, state, budget_spent=spent)
        try:
            result = await run_generation(
                self._gateway.client("chat"),
                prompt.messages,
                bundle,
                tool_context,
                self._limits,
                state=state,
                fallback_text=fallback_text,
                results=ResultAllowance(budget.tool_result_reserve, budget.count),
                outcome_texts=outcome_texts,
                courtesy_texts=courtesy_texts,
                bindings=bindings,
            )
        except ModelAPIError as exc:  # transient, before anything was done (the loop's rule)
            held = GenerationResult(
                Outcome.FALLBACK, text_blocks(fallback_text), detail=f"model unavailable: {exc}", hold=True
            )
            run = AgentRun(held, decision.as_json(), bundle.tool_names, prompt.prefix_hash, prompt.size, state)
            raise ModelOutage(exc, run) from exc
        memory_due = self._gateway.configured("utility") and self._cadence.due(
            context.assistant_replies + 1, context.snapshot_replies_covered, context.snapshot_updated_at, now
        )
        route = decision.as_json()
        if pack.knowledge is not None:
            route["knowledge"] = [note.ref for note in notes]  # the exact wording the model saw
        if bundle.trimmed:
            route["tools_trimmed"] = list(bundle.trimmed)  # qualified, but over the schema budget
        return AgentRun(result, route, bundle.tool_names, prompt.prefix_hash, prompt.size, state, memory_due)

    def _prefix(self, pack: AgentPack, view: TenantTurnView | None, business_name: str, policy: IdentityPolicy) -> str:
        lines = view.playbook_lines if view is not None else ""
        playbook, compact_playbook = tenant_playbooks(pack.playbook, pack.compact_playbook, lines)
        compact = self._budget.for_model(self.model_name).compact
        return static_prefix(business_name, policy, playbook, compact=compact, compact_playbook=compact_playbook)

    async def opening_of(
        self, tenant_id: str, pack_name: str, business_name: str, policy_overrides: Mapping[str, Any], revision: int
    ) -> str:
        """The static prefix every turn of this tenant opens with, byte for byte as ``generate``
        builds it: what an embedded model can evaluate ahead, before the first customer writes."""
        pack = self.pack(pack_name)
        view = await pack.for_tenant(tenant_id, revision) if pack.for_tenant else None
        defaults = {**pack.default_policy, **(view.policy_defaults if view is not None else {})}
        return self._prefix(pack, view, business_name, merge_policy(defaults, policy_overrides))

    async def _images(self, turn: Turn) -> list[BinaryContent]:
        """The batch's customer images, inline, for a vision model (a few, newest last)."""
        if self._media is None:
            return []
        images: list[BinaryContent] = []
        own_prefix = tenant_prefix(turn.tenant_id) + "/"  # never another tenant's object, whatever a row says
        for message in turn.batch:
            key = message.image_key
            # A legacy key (before media were keyed by tenant) comes from this conversation's own row.
            own = key is not None and (key.startswith(own_prefix) or LEGACY_KEY_PATTERN.fullmatch(key) is not None)
            if key is not None and own and len(images) < MAX_IMAGES_PER_TURN:
                try:
                    data, mime = await self._media.get(key)
                except NotFoundError:
                    continue
                if not mime.startswith("image/"):  # bytes that are no image are never handed to the model
                    continue
                images.append(BinaryContent(data=data, media_type=mime))
        return images

    async def courtesy_after_handoff(self, turn: Turn, context: ConversationContext) -> AgentRun:
        """The reply for messages whose turn handed the thread to a person but never committed its
        own reply: the pack's hold message, in the conversation's language, without a model."""
        pack = self.pack(context.pack)
        language = context.likely_language
        text = pack.fallback_texts.get(language, FALLBACK_TEXT)
        result = GenerationResult(Outcome.FALLBACK, text_blocks(text), detail="courtesy reply after a hand-off")
        return AgentRun(result, route={"intent": "handed_off", "language": language})
