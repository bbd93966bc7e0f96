"""Wiring every port once. ``app.py`` serves it over HTTP; ``cli.py`` uses it for chat and demo.

This module and ``app.py`` are the only places that know every layer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx2
from sqlalchemy import select

from frontdesk import __version__
from frontdesk.capabilities.confirmation import PendingActions
from frontdesk.capabilities.mcp import McpToolSource, parse_target
from frontdesk.capabilities.policy import SchemaFit, ToolPolicyCatalog
from frontdesk.capabilities.search import SearchIndex, build_search_index
from frontdesk.capabilities.tool_index import ToolIndex, tool_cards
from frontdesk.context.budget import BudgetConfig, ContextBudget
from frontdesk.context.conversation import ContextLoader
from frontdesk.context.episodic import EpisodicCadence
from frontdesk.context.identity import LANGUAGE_NAMES, merge_policy
from frontdesk.context.knowledge import load_pack_knowledge
from frontdesk.context.summarizer import SUMMARIZE_CONVERSATION, EpisodicSummarizer
from frontdesk.humans.notifications import DISPATCH_NOTIFICATION, Dispatcher, build_routes
from frontdesk.humans.notifications.watch import FailedDeliveryWatch, notify_rejection_spikes
from frontdesk.ingestion.accounts import AccountDirectory, seal_plaintext_secrets
from frontdesk.ingestion.channels import CHANNELS, ChannelDeps, warn_accounts_without_own_id
from frontdesk.ingestion.channels.webchat.limits import WebchatLimits, WebchatRates
from frontdesk.ingestion.ingest import PROCESS_CONVERSATION, Ingestor
from frontdesk.ingestion.lease import ConversationLease
from frontdesk.ingestion.preparation import PREPARE_MEDIA, MediaPreparer
from frontdesk.ingestion.quiet_window import QuietWindow
from frontdesk.ingestion.transcription import HintSource, Transcriber, TranscriptionHints
from frontdesk.output.delivery import Deliverer
from frontdesk.output.transcript import message_text
from frontdesk.packs import MCP_PACKS, PACKS, Pack, PackDeps
from frontdesk.packs.loyalty import McpPack
from frontdesk.packs.loyalty.flow import RuleFlow
from frontdesk.platform.clock import Clock, SystemClock
from frontdesk.platform.ids import ConversationId
from frontdesk.platform.jobs import ClaimedJob, JobPolicy, JobQueue
from frontdesk.platform.media import build_media_store
from frontdesk.platform.model_budget import ModelBudget
from frontdesk.platform.models.gateway import ModelClient, ModelGateway, parse_model_spec
from frontdesk.platform.models.local import LocalModelClient, LocalModelOptions
from frontdesk.platform.outbound import GuardedClient, OutboundAllow
from frontdesk.platform.signals import ConversationSignals
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import Message, Tenant
from frontdesk.platform.store.schema_business import BusinessProfileRow, CatalogItemRow
from frontdesk.platform.vault import build_vault
from frontdesk.platform.workers import JobRunner
from frontdesk.reasoning.action_router import ActionLexicon, ActionRouter
from frontdesk.reasoning.agent import Agent, AgentPack, TenantTurnView, TenantView
from frontdesk.reasoning.entity_names import NameRefresh
from frontdesk.reasoning.loop import LoopLimits
from frontdesk.reasoning.router import Router
from frontdesk.reasoning.terminal import reply_tool_definition
from frontdesk.settings import Settings
from frontdesk.turns.assembler import Attempt, TurnAssembler
from frontdesk.turns.commit import TurnCommitter
from frontdesk.turns.recovery import recover_dead_worker
from frontdesk.turns.recovery import requeue_orphans as requeue_orphaned_turns
from frontdesk.turns.sql_store import SqlTurnStore
from frontdesk.turns.warm import warm_openings
from frontdesk.workflows import WorkflowStore

log = logging.getLogger(__name__)

PACKS_DIR = Path(__file__).resolve().parent / "packs"  # each pack's data/knowledge.json

DEMO_MODEL = "script:demo"
# What a process of ``serve`` does: everything, the HTTP edge only, or turns only (worker_process.py).
ProcessRole = Literal["whole", "edge", "worker"]


@dataclass
class Runtime:
    settings: Settings
    db: Database
    clock: Clock
    queue: JobQueue
    ingestor: Ingestor
    assembler: TurnAssembler
    signals: ConversationSignals
    runner: JobRunner
    channel_deps: ChannelDeps
    model_label: str
    packs: dict[str, Pack]
    deliverer: Deliverer
    workflows: WorkflowStore
    agent_packs: dict[str, AgentPack]
    schema_fit: SchemaFit
    mcp_sources: list[McpToolSource] = field(default_factory=list)
    search: SearchIndex | None = None
    gateway: ModelGateway | None = None
    compact_prompt: bool = False  # the chat slot's model reads the compact prompt (chat_prompt_style)
    # What the MCP packs' services call their things, read at start and refreshed by a sweep.
    names: NameRefresh = field(default_factory=lambda: NameRefresh(SystemClock()))
    agent: Agent | None = None
    _warming: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    @property
    def chat_client(self) -> ModelClient | None:
        return self.gateway.client("chat") if self.gateway is not None else None

    @classmethod
    def build(
        cls,
        settings: Settings,
        *,
        gateway: ModelGateway | None = None,
        clock: Clock | None = None,
        db: Database | None = None,
    ) -> Runtime:
        clock = clock or SystemClock()
        db = db or Database.from_url(settings.database_url, pool_size=settings.database_pool_size)
        if gateway is None:
            gateway, model_label = _gateway_from_settings(settings)
        else:
            model_label = "Model: injected"
        queue = JobQueue(
            db,
            clock,
            JobPolicy(settings.job_max_attempts, settings.job_backoff_s, settings.job_lease_s),
        )
        signals = ConversationSignals()
        ingestor = Ingestor(db, queue, clock, turn_delay_s=settings.quiet_window_s, on_stored=signals.publish)
        vault = build_vault(db, settings, clock)
        accounts = AccountDirectory(db, vault)
        media = build_media_store(settings)
        tls = httpx2.create_ssl_context()  # loading the CA bundle takes a tenth of a second: once, for both clients
        http = httpx2.AsyncClient(
            verify=tls,
            timeout=settings.channel_timeout_s,
            headers={"User-Agent": f"frontdesk/{__version__}"},
            # Idle connections are dropped before the common 5 s server keep-alive (uvicorn,
            # Node, Apache) closes them: reusing one the platform is closing fails the send.
            limits=httpx2.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=2.0),
        )
        # URLs a tenant or a customer chose (webhooks, customer media) go through the outbound
        # guard; the platforms' configured API bases stay on ``http`` (the deployer set those).
        guarded_http = GuardedClient(
            OutboundAllow.parse(settings.outbound_allow),
            timeout=settings.channel_timeout_s,
            headers={"User-Agent": f"frontdesk/{__version__}"},
            limits=httpx2.Limits(max_connections=50, max_keepalive_connections=10, keepalive_expiry=2.0),
            ssl_context=tls,
        )
        notifier = Dispatcher(
            db,
            clock,
            build_routes(
                http=http,
                guarded_http=guarded_http,
                secrets=vault,
                clock=clock,
                smtp_url=settings.smtp_url,
                sender=settings.notify_from,
                timeout_s=settings.notify_timeout_s,
            ),
            timeout_s=settings.notify_timeout_s,
            conversation_url=public_base_url(settings) + "/console/conversations/{conversation_id}",
        )
        deps = ChannelDeps(
            db,
            ingestor,
            signals,
            settings.webchat_max_text_chars,
            model_label,
            clock,
            accounts,
            http,
            media,
            public_base_url(settings),
            guarded_http,
            WebchatLimits(
                WebchatRates(
                    per_session=settings.webchat_messages_per_minute_session,
                    per_ip=settings.webchat_messages_per_minute_ip,
                    per_account=settings.webchat_messages_per_minute_account,
                )
            ),
        )
        renderers = {name: channel.renderer(deps) for name, channel in CHANNELS.items()}
        deliverer = Deliverer(db, clock, renderers, on_finished=signals.publish)
        loader = ContextLoader(db)
        search = build_search_index(settings, db, clock)  # a bad embeddings slot fails here, at start-up
        built_packs = agent_packs(settings, db, clock, search)  # MCP packs join in ``start``
        budget = BudgetConfig(
            settings.chat_context_window or _local_window(settings),
            settings.chat_history_max_tokens,
            settings.chat_response_reserve_tokens,
            settings.chat_tool_result_reserve_tokens,
            settings.chat_tool_schema_budget_tokens,
            settings.chat_prompt_style,
        )
        preparer = MediaPreparer(
            db,
            ingestor,
            accounts,
            {name: channel.fetcher(deps) for name, channel in CHANNELS.items() if channel.fetcher is not None},
            media,
            Transcriber(gateway, transcription_hints(db, loader, clock, pack_deps(settings, db, clock))),
        )
        lease = ConversationLease(db, clock, settings.lease_ttl_s)
        agent = Agent(
            gateway,
            clock,
            LoopLimits(max_steps=settings.max_steps),
            built_packs,
            EpisodicCadence(every_replies=settings.memory_every_replies),
            media,
            budget=budget,
        )
        assembler = TurnAssembler(
            SqlTurnStore(
                db,
                clock,
                lease,
                loader,
                TurnCommitter(clock, lease, loader.ledgers, queue, deliverer),
                deliverer,
                queue,
                ModelBudget(db, clock, per_hour=settings.model_turns_per_hour, per_day=settings.model_turns_per_day),
                agent.zone_of,
            ),
            clock,
            agent,
            deliverer,
            QuietWindow(settings.quiet_window_s, settings.quiet_window_cap_s, settings.media_ready_timeout_s),
            settings.model_outage_budget_s,
        )

        async def process_conversation(job: ClaimedJob) -> None:
            attempt = Attempt(job.attempts, job.max_attempts)
            await assembler.process(str(job.payload["conversation_id"]), job.claim_id, attempt)

        summarizer = EpisodicSummarizer(db, gateway, clock)

        async def summarize_conversation(job: ClaimedJob) -> None:
            await summarizer.run(str(job.payload["conversation_id"]))

        async def requeue_orphans() -> int:
            return await requeue_orphaned_turns(db, clock, queue)

        workflows = WorkflowStore(db, clock)

        async def drop_expired_drafts() -> int:
            return await workflows.cleanup_expired(clock.now())

        names = NameRefresh(clock)
        runner = JobRunner(
            queue,
            {
                PROCESS_CONVERSATION: process_conversation,
                SUMMARIZE_CONVERSATION: summarize_conversation,
                PREPARE_MEDIA: preparer.run,
                DISPATCH_NOTIFICATION: notifier.run,
            },
            concurrency=settings.workers,
            poll_interval_s=settings.poll_interval_s,
            sweeps=[
                queue.requeue_abandoned,
                requeue_orphans,
                drop_expired_drafts,
                FailedDeliveryWatch(db, clock),
                lambda: notify_rejection_spikes(db, clock),
                names,
            ],
            sweep_interval_s=settings.sweeper_interval_s,
            shutdown_grace_s=settings.shutdown_grace_s,
        )
        return cls(
            settings,
            db,
            clock,
            queue,
            ingestor,
            assembler,
            signals,
            runner,
            deps,
            model_label,
            dict(PACKS),
            deliverer,
            workflows,
            built_packs,
            schema_fit(budget.for_model(gateway.client("chat").name)),
            gateway=gateway,
            search=search,
            compact_prompt=budget.for_model(gateway.client("chat").name).compact,
            names=names,
            agent=agent,
        )

    async def recover_dead_worker(self, worker: str) -> tuple[int, int]:
        """(jobs queued again, leases let go) of a worker known to be dead (``turns/recovery.py``)."""
        lease = ConversationLease(self.db, self.clock, self.settings.lease_ttl_s)
        return await recover_dead_worker(lease, self.queue, worker)

    async def start(self, mcp_targets: Mapping[str, Any] | None = None, *, role: ProcessRole = "whole") -> None:
        """Connect the MCP servers of the packs that use one (``mcp_servers``, or ``mcp_targets``:
        server objects in tests) and make those packs available. A pack whose server is not
        configured stays unavailable; its tenants' turns fail with a clear error. First, with a
        vault key configured, any channel secret still in plaintext moves into the vault.
        ``role``: in ``serve`` with worker processes, the HTTP process (``edge``) does the
        start-up chores and the ``worker`` processes load the embedded model (each one that runs
        turns holds its own copy); ``whole`` does both."""
        if role != "worker":
            await seal_plaintext_secrets(self.db, self.channel_deps.accounts.vault)
            await warn_accounts_without_own_id(self.db)
        await self.channel_deps.media.check()  # a missing or refused bucket stops start-up, not a media job
        if role != "edge" and isinstance(self.chat_client, LocalModelClient):
            # Join, verify and load the weights now (idempotent: the demo did it with a progress
            # bar), so neither a bad file nor the load time lands in a customer's first turn.
            await asyncio.to_thread(self.chat_client.load)
            if self.agent is not None:
                # In the background: requests are served meanwhile, and a turn that comes first
                # waits behind one opening at most (the model runs one thing at a time).
                self._warming = asyncio.create_task(self._warm(self.chat_client, self.agent), name="warm openings")
        if role != "worker":
            # A worker process hands its publishes to its edge, which NOTIFYs the other instances:
            # no LISTEN connection (nor store watcher) per worker.
            await self.signals.start(self.db)
            await warn_tenants_without_data(self.db)
        targets: dict[str, Any] = {name: parse_target(t) for name, t in self.settings.mcp_servers.items()}
        targets.update(mcp_targets or {})
        for pack in MCP_PACKS.values():
            if pack.name in self.agent_packs or pack.mcp_server not in targets:
                continue
            source = McpToolSource(pack.mcp_server, targets[pack.mcp_server])
            await source.connect()
            self.mcp_sources.append(source)
            agent_pack = mcp_agent_pack(pack, source, self.workflows, self.schema_fit)
            self.agent_packs[pack.name] = agent_pack
            if isinstance(agent_pack.router, ActionRouter) and pack.name_sources:
                await self.names.add(agent_pack.router, source.call, pack.name_sources)

    async def _warm(self, client: LocalModelClient, agent: Agent) -> None:
        try:
            await warm_openings(self.db, agent, client)
        except Exception:  # a turn evaluates its opening itself: nothing is lost but time
            log.warning("could not evaluate the businesses' openings ahead", exc_info=True)

    async def close(self) -> None:
        if self._warming is not None:
            self._warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._warming
        await self.runner.stop()
        await self.signals.close()
        for source in self.mcp_sources:
            await source.close()
        for agent_pack in self.agent_packs.values():
            agent_pack.catalog.close()
        await self.channel_deps.http.aclose()
        await self.channel_deps.guarded_http.aclose()
        await self.db.dispose()


def public_base_url(settings: Settings) -> str:
    return (settings.public_url or f"http://{settings.host}:{settings.port}").rstrip("/")


CATALOG_PHOTOS_PATH = "/media/catalog"  # where ``app.py`` serves tenants' gallery photos


def pack_deps(settings: Settings, db: Database, clock: Clock, search: SearchIndex | None = None) -> PackDeps:
    return PackDeps(db, clock, public_base_url(settings) + CATALOG_PHOTOS_PATH, search)


def agent_packs(
    settings: Settings, db: Database, clock: Clock, search: SearchIndex | None = None
) -> dict[str, AgentPack]:
    """Each registered pack as the agent uses it: its tools behind the fail-closed catalog, its
    lexicons (with each tenant's item words) as a router."""
    built: dict[str, AgentPack] = {}
    deps = pack_deps(settings, db, clock, search)
    for name, pack in PACKS.items():
        tools = pack.build_tools(deps)
        built[name] = AgentPack(
            name=name,
            catalog=ToolPolicyCatalog(tools, pack.policies, discovery_domains=pack.discovery_domains),
            router=Router(pack.lexicons, {}),
            default_policy=pack.default_policy,
            playbook=pack.playbook,
            compact_playbook=pack.compact_playbook,
            fallback_texts=pack.fallback_texts,
            voice_failed_texts=pack.voice_failed_texts,
            outcome_texts=pack.outcome_texts,
            courtesy_texts=pack.courtesy_texts,
            knowledge=load_pack_knowledge(PACKS_DIR / name),
            for_tenant=tenant_view(pack, deps) if pack.tenant_data is not None else None,
        )
    return built


def tenant_view(pack: Pack, deps: PackDeps) -> TenantView:
    """The pack as each tenant's data shapes it, kept until the tenant's data changes: a caller
    that knows the current revision (the turn's context loaded it) costs no read while it holds."""
    assert pack.tenant_data is not None
    read = pack.tenant_data
    built: dict[str, tuple[int, TenantTurnView]] = {}

    async def view(tenant_id: str, revision: int | None = None) -> TenantTurnView:
        cached = built.get(tenant_id)
        if cached is not None and revision is not None and cached[0] == revision:
            return cached[1]
        data = await read(deps, tenant_id)
        if cached is not None and cached[0] == data.revision:
            return cached[1]
        fresh = TenantTurnView(
            Router(pack.lexicons, data.item_words),
            data.playbook_lines,
            data.policy_defaults,
            data.item_words,
            data.hold_texts,
            data.data_languages,
        )
        built[tenant_id] = (data.revision, fresh)
        return fresh

    return view


async def warn_tenants_without_data(db: Database) -> None:
    """Name, at every start, each tenant of the catalog pack whose catalog or profile is empty:
    its customers would hear only "the team will get back to you" (tenants upgraded from the
    print shop pack, whose data was files in the code, are such tenants)."""
    has_items = select(CatalogItemRow.tenant_id).where(CatalogItemRow.tenant_id == Tenant.id).exists()
    has_profile = select(BusinessProfileRow.tenant_id).where(BusinessProfileRow.tenant_id == Tenant.id).exists()
    async with db.read() as session:  # one query, however many tenants
        rows = list(
            await session.execute(
                select(Tenant.id, has_items, has_profile).where(Tenant.pack == "catalog").order_by(Tenant.id)
            )
        )
    for tenant_id, items, profile in rows:
        missing = " and ".join(m for m, present in (("catalog", items), ("profile", profile)) if not present)
        if missing:
            log.warning(
                "tenant %s has no %s yet: import its business file with "
                "`frontdesk catalog import FILE --tenant %s` (docs/business-data.md)",
                tenant_id,
                missing,
                tenant_id,
            )


def schema_fit(budget: ContextBudget) -> SchemaFit:
    """What the chat slot leaves for a turn's tool schemas once the always-present reply tool is in."""
    reply = budget.schema_tokens([reply_tool_definition()])
    return SchemaFit(budget.tool_schema_budget - reply, lambda tool: budget.schema_tokens([tool.definition()]))


def mcp_agent_pack(
    pack: McpPack, source: McpToolSource, workflows: WorkflowStore, fit: SchemaFit | None = None
) -> AgentPack:
    """An MCP-backed pack as the agent uses it: the server's tools, the pack's flow tools and the
    confirmation step behind its policies (trimmed to ``fit``), the action router, and the open
    flow's phase (or a proposal waiting for a yes) from the workflow store."""
    flow = RuleFlow(workflows, source.call)
    tools = pack.tools(source, flow.tools())
    by_name = {tool.name: tool for tool in tools}
    pending = PendingActions(workflows, by_name.get)
    policies = {**pack.policies(), **pending.policies()}
    domains = {name: policy.domains for name, policy in policies.items()}
    catalog = ToolPolicyCatalog(
        [*tools, *pending.tools()],
        policies,
        discovery_domains=pack.discovery_domains,
        proposals=pending.proposal,
        fit=fit,
        index=ToolIndex(tool_cards(tools, domains, pack.tool_phrases)),
    )

    async def flow_state(conversation_id: str) -> tuple[str, frozenset[str]] | None:
        for workflow, domains in pack.workflow_domains.items():
            draft = await workflows.current(ConversationId(conversation_id), workflow)
            if draft is not None and draft.status == "open":
                return draft.phase, domains
        return await pending.state(conversation_id)

    return AgentPack(
        name=pack.name,
        catalog=catalog,
        router=ActionRouter(ActionLexicon(**pack.lexicon)),
        default_policy=pack.default_policy,
        playbook=pack.playbook,
        fallback_texts=pack.fallback_texts,
        flow_state=flow_state,
        knowledge=load_pack_knowledge(PACKS_DIR / pack.name),
    )


def transcription_hints(db: Database, loader: ContextLoader, clock: Clock, deps: PackDeps) -> HintSource:
    """Context for the transcriber: the business, the customer's likely language (what episodic
    memory learned wins over the business's default), the pack's trade words, the last lines."""

    async def hints(conversation_id: str) -> TranscriptionHints:
        context = await loader.load(conversation_id, clock.now())
        pack = PACKS.get(context.pack)
        policy = merge_policy(pack.default_policy if pack else {}, context.policy_overrides)
        language = (context.episodic.preferred_language if context.episodic else "") or context.last_language
        async with db.read() as session:
            business = await session.scalar(select(Tenant.name).where(Tenant.id == context.tenant_id))
            recent = list(
                await session.scalars(
                    select(Message)
                    .where(Message.conversation_id == conversation_id, Message.status == "ready")
                    .order_by(Message.id.desc())
                    .limit(4)
                )
            )
        words = await pack.tenant_data(deps, context.tenant_id) if pack and pack.tenant_data else None
        keywords = sorted({w for ws in (words.item_words.values() if words else []) for w in ws})
        return TranscriptionHints(
            business_name=business or "",
            language=LANGUAGE_NAMES.get(language or policy.operator_language, language or policy.operator_language),
            keywords=keywords[:40],
            recent_lines=[f"{m.role}: {message_text(m)[:200]}" for m in reversed(recent)],
        )

    return hints


def _local_window(settings: Settings) -> int | None:
    """An embedded chat model's window is the context it is loaded with."""
    chat = settings.model_chat or ""
    return settings.local_model_context if chat.startswith("local:") else None


def _gateway_from_settings(settings: Settings) -> tuple[ModelGateway, str]:
    slots = {
        "chat": settings.model_chat,
        "utility": settings.model_utility,
        "embeddings": settings.model_embeddings,
        "transcription": settings.model_transcription,
    }
    local = LocalModelOptions(
        settings.model_cache_dir,
        settings.local_model_threads,
        settings.local_model_context,
        settings.local_model_state_cache_mb,
    )
    if settings.model_chat:
        gateway = ModelGateway(slots, timeout_s=settings.model_timeout_s, local=local)
        chat = gateway.client("chat")  # a missing API key or bad model string fails at start-up, not mid-turn
        if isinstance(chat, LocalModelClient):
            return gateway, f"Model: {chat.name}, offline on this machine"  # the file's name, not its path
        spec = parse_model_spec(settings.model_chat)
        return gateway, f"Model: {spec.provider}:{spec.model}"  # never the base URL: the page is public
    log.warning(
        "no chat model configured (FRONTDESK_MODEL_CHAT): replies come from the offline script of the demo "
        "print shop, which knows nothing of any other business; set a model before customers write"
    )
    slots["chat"] = DEMO_MODEL
    label = "Offline demo model (scripted) — set FRONTDESK_MODEL_CHAT for a real one"
    return ModelGateway(slots, timeout_s=settings.model_timeout_s, local=local), label
