"""The ``frontdesk`` command."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
import uvicorn
from pydantic import ValidationError
from rich.console import Console

from frontdesk.cli_business import catalog_app, profile_app, tenants_app
from frontdesk.cli_business import register as register_business_commands
from frontdesk.cli_operators import operators_app
from frontdesk.cli_vault import vault_app
from frontdesk.demo import load_with_progress, offline_chat_model, seed_demo
from frontdesk.errors import ConfigError, FrontdeskError
from frontdesk.output.transcript import read_transcript
from frontdesk.packs import MCP_PACKS, PACKS
from frontdesk.platform.models.local import LocalModelClient
from frontdesk.platform.observability import Observability, configure_logging
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.migrate import current_revision, upgrade
from frontdesk.platform.worker_pool import WorkerPool
from frontdesk.runtime import Runtime
from frontdesk.settings import Settings
from frontdesk.worker_process import run_worker_process, worker_process_count

app = typer.Typer(help="frontdesk: a trustworthy LLM agent on your customer channels.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")
accounts_app = typer.Typer(help="Channel accounts (Telegram bots, Meta pages, LINE channels...).", no_args_is_help=True)
app.add_typer(accounts_app, name="accounts")
receipts_app = typer.Typer(help="Delivery receipts.", no_args_is_help=True)
app.add_typer(receipts_app, name="receipts")
app.add_typer(vault_app, name="vault")
app.add_typer(operators_app, name="operators")
app.add_typer(tenants_app, name="tenants")
app.add_typer(catalog_app, name="catalog")
app.add_typer(profile_app, name="profile")

HostOption = Annotated[str | None, typer.Option(help="bind address (default: FRONTDESK_HOST)")]
PortOption = Annotated[int | None, typer.Option(help="port (default: FRONTDESK_PORT)")]
WorkerProcessesOption = Annotated[
    int | None,
    typer.Option(
        help="processes running turns beside the HTTP one; 0: in it (default: FRONTDESK_WORKER_PROCESSES, "
        "else 1 on SQLite, one per core but one on PostgreSQL)",
        min=0,
        max=32,
    ),
]


def _settings(**overrides: object) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]  # validated by pydantic
    except ValidationError as exc:
        problems = "; ".join(
            f"FRONTDESK_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise ConfigError(f"invalid settings: {problems}") from exc


def _demo_settings(**overrides: object) -> Settings:
    """Settings for the demo and the terminal chat: with no chat model configured, the embedded
    offline model when it is installed."""
    settings = _settings(**overrides)
    offline = offline_chat_model(settings)
    return settings if offline is None else _settings(**overrides, model_chat=offline)


def _demo_database(settings: Settings) -> Settings:
    """The demo's own database (``demo_database_url``), never the configured business database."""
    return settings.model_copy(update={"database_url": settings.demo_database_url})


register_business_commands(_settings, {*PACKS, *MCP_PACKS})


def _prepare_offline_model(runtime: Runtime, *, load: bool = True) -> None:
    """Verify (and with ``load``, load) an embedded chat model before serving, with progress,
    instead of inside the first turn."""
    client = runtime.chat_client
    if isinstance(client, LocalModelClient):
        load_with_progress(client, Console(stderr=True), load=load)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply every pending migration to FRONTDESK_DATABASE_URL."""
    logging.getLogger("alembic").setLevel(logging.INFO)

    async def run() -> str | None:
        db = Database.from_url(_settings().database_url)
        try:
            await upgrade(db)
            return await current_revision(db)
        finally:
            await db.dispose()

    typer.echo(f"database at revision {asyncio.run(run())}")


@app.command()
def demo(host: HostOption = None, port: PortOption = None, worker_processes: WorkerProcessesOption = None) -> None:
    """Create/migrate the demo's own database, seed the demo business and serve its web chat."""
    settings = _demo_database(_demo_settings(host=host, port=port, worker_processes=worker_processes))

    async def run() -> None:
        runtime = Runtime.build(settings)
        _prepare_offline_model(runtime, load=worker_process_count(settings) == 0)
        await upgrade(runtime.db)
        accounts = await seed_demo(runtime.db, runtime.clock, runtime.channel_deps.media)
        base = settings.public_url or f"http://{settings.host}:{settings.port}"
        typer.echo(f"\n  frontdesk demo — {runtime.model_label}")
        typer.echo(f"  Chat with the demo business: {base}/webchat/{accounts.webchat_id}\n")
        await _serve(runtime, settings)

    asyncio.run(run())


@app.command()
def serve(host: HostOption = None, port: PortOption = None, worker_processes: WorkerProcessesOption = None) -> None:
    """Run the HTTP server and its worker processes from settings (migrate first with `db upgrade`)."""
    settings = _settings(host=host, port=port, worker_processes=worker_processes)

    async def run() -> None:
        runtime = Runtime.build(settings)
        if await current_revision(runtime.db) is None:
            await runtime.db.dispose()
            raise ConfigError("the database has no schema: run `frontdesk db upgrade` first")
        await _serve(runtime, settings)

    asyncio.run(run())


async def _serve(runtime: Runtime, settings: Settings, *, started: asyncio.Event | None = None) -> None:
    """The public server and, beside it, the metrics listener (``metrics_host:metrics_port``)
    and the worker processes (``worker_processes``; none: the jobs run in this process), until
    SIGTERM or Ctrl-C. ``started`` is set once both accept connections."""
    from frontdesk.app import create_app, create_metrics_app

    processes = worker_process_count(settings)

    async def recover(worker: str) -> None:
        jobs, leases = await runtime.recover_dead_worker(worker)
        logging.getLogger(__name__).warning(
            "worker %s died: %d running job(s) queued again, %d conversation lease(s) let go", worker, jobs, leases
        )

    pool = (
        WorkerPool(processes, run_worker_process, (settings,), on_changed=runtime.signals.publish, on_dead=recover)
        if processes and settings.workers
        else None
    )
    # On SIGTERM/Ctrl-C the workers stop claiming at once and get ``shutdown_grace_s`` to finish
    # their turns (then hand them back), while uvicorn closes the HTTP side in parallel. Open chat
    # streams never end by themselves: they get a few seconds, then are closed.
    draining: list[asyncio.Task[None]] = []

    def begin_draining() -> None:
        if not draining:
            stopping = (
                runtime.runner.stop(settings.shutdown_grace_s) if pool is None else pool.stop(settings.shutdown_grace_s)
            )
            draining.append(asyncio.create_task(stopping, name="drain"))

    # uvicorn's own log_config is off: its error and access lines go through our formatter.
    configure_logging(settings.log_format, settings.log_level)
    observability = Observability.from_settings(settings)  # one registry: the public app's and the listener's
    others = pool.metrics if pool is not None else None
    app = create_app(runtime, observability=observability, run_workers=pool is None, other_metrics=others)
    config = server_config(app, settings)
    metrics = observability.metrics if settings.metrics_port is not None else None
    try:
        if pool is not None:
            runtime.queue.wake_elsewhere(pool.wake)
            runtime.db.favour_writes()  # on SQLite an acknowledgement never queues behind a run of turns
            await pool.start()
        async with _metrics_listener(
            None if metrics is None else create_metrics_app(runtime, metrics, others=others), settings
        ):
            server = _QuietExitServer(config, on_exit=begin_draining, on_started=started.set if started else None)
            await server.serve()
    finally:
        begin_draining()  # the server may also stop without a signal (a failed start-up)
        await draining[0]
        await runtime.close()


def server_config(app: Any, settings: Settings) -> uvicorn.Config:
    """How uvicorn serves ``app``. Forwarded headers are believed only from the proxies
    ``forwarded_allow_ips`` names (uvicorn's own default would trust 127.0.0.1): a client's
    address is what the sign-in limits count, so a header anyone can write must not set it."""
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        log_level=settings.log_level.lower(),
        timeout_keep_alive=settings.http_keep_alive_s,
        timeout_graceful_shutdown=5,
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=list(settings.forwarded_allow_ips) or None,
    )


@contextlib.asynccontextmanager
async def _metrics_listener(app: Any, settings: Settings) -> AsyncIterator[None]:
    """``app`` (the metrics app; None: no listener) served on ``metrics_host:metrics_port`` for as
    long as the block runs. The port is bound before anything is served. Taken, a ``metrics_port``
    the settings name stops start-up (``ConfigError``); the default one (9464) is only a guess, so
    a second instance on the same machine (a developer's demo beside a server, a test run) starts
    without a listener and says so in a warning."""
    log = logging.getLogger(__name__)
    if app is None or settings.metrics_port is None:
        yield
        return
    try:
        sock = _listening_socket(settings.metrics_host, settings.metrics_port)
    except OSError as exc:
        where = f"{settings.metrics_host}:{settings.metrics_port} ({exc.strerror or exc})"
        if "metrics_port" in settings.model_fields_set:
            raise ConfigError(
                f"the metrics listener cannot listen on {where}: is another frontdesk running on this "
                "machine? give each instance its own metrics_port"
            ) from None
        log.warning("no metrics listener: %s is taken; set metrics_port for each instance on this machine", where)
        yield
        return
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level=settings.log_level.lower(),
        lifespan="off",
        access_log=False,  # a line per scrape is noise
        timeout_graceful_shutdown=1,
    )
    server = _SideServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="metrics listener")
    log.info("metrics on http://%s:%d/metrics", f"[{host}]" if ":" in host else host, port)
    try:
        yield
    finally:
        server.should_exit = True
        await task


def _listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening (connections queue until the server
    runs). ``ConfigError`` for a host that does not resolve; ``OSError`` when it cannot bind."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except OSError as exc:
        raise ConfigError(f"metrics_host {host!r}: {exc.strerror or exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class _SideServer(uvicorn.Server):
    """A server beside the public one: it leaves the signals to that one, which stops it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _QuietExitServer(uvicorn.Server):
    """Ctrl-C / SIGTERM shut the server down and the command exits 0. (uvicorn's own handler
    re-raises the signal after shutdown, which cancels our clean-up mid-way.)"""

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        on_exit: Callable[[], None],
        on_started: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(config)
        self._on_exit = on_exit
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self._on_started is not None:
            self._on_started()

    def _exit_on(self, sig: int) -> None:
        self._on_exit()
        self.handle_exit(sig, None)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._exit_on, sig)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


@app.command()
def chat(
    tenant: Annotated[str | None, typer.Option(help="talk to this business (its database) instead of the demo")] = None,
) -> None:
    """Talk to the demo business, or your own (--tenant), from this terminal: the same store and
    pipeline as the web chat."""
    # Either way, with no chat model configured: the embedded model when it is installed.
    settings = _demo_settings()
    if tenant is None:
        settings = _demo_database(settings)

    async def run() -> None:
        runtime = Runtime.build(settings)
        _prepare_offline_model(runtime)
        if tenant is None:
            await upgrade(runtime.db)
            account_id = (await seed_demo(runtime.db, runtime.clock, runtime.channel_deps.media)).terminal_id
        else:
            account_id = await _terminal_account(runtime, tenant)
        runtime.runner.start()
        session = f"term-{secrets.token_hex(4)}"
        typer.echo(f"frontdesk chat — {runtime.model_label}. Ctrl-D to quit.")
        try:
            await _chat_loop(runtime, account_id, session)
        finally:
            await runtime.close()

    asyncio.run(run())


async def _terminal_account(runtime: Runtime, tenant_id: str) -> str:
    """The tenant's terminal account (``terminal-<tenant>``), made the first time it is needed."""
    from frontdesk.platform.store.schema import ChannelAccount, Tenant

    if await current_revision(runtime.db) is None:
        await runtime.db.dispose()
        raise ConfigError("the database has no schema: run `frontdesk db upgrade` first")
    account_id = f"terminal-{tenant_id}"[:40]
    async with runtime.db.transaction() as session:
        found = await session.get(Tenant, tenant_id)
        if found is None:
            raise ConfigError(f"no tenant {tenant_id!r} (see `frontdesk tenants list`)")
        if await session.get(ChannelAccount, account_id) is None:
            session.add(
                ChannelAccount(
                    id=account_id,
                    tenant_id=tenant_id,
                    channel="terminal",
                    name=f"{found.name} — terminal",
                    config={},
                    created_at=runtime.clock.now(),
                )
            )
    return account_id


async def _chat_loop(runtime: Runtime, account_id: str, session: str) -> None:
    from frontdesk.ingestion.events import InboundMessage

    shown = 0
    counter = 0
    while True:
        line = await asyncio.to_thread(_read_line)
        if line is None:
            return
        if not line.strip():
            continue
        counter += 1
        result = await runtime.ingestor.ingest(
            InboundMessage(
                channel_account_id=account_id,
                contact_external_id=session,
                channel_message_id=f"{session}:{counter}",
                text=line.strip()[: runtime.settings.webchat_max_text_chars],
            )
        )
        conversation_id = result.conversation_id
        deadline = (
            asyncio.get_running_loop().time() + runtime.settings.quiet_window_cap_s + runtime.settings.model_timeout_s
        )
        while asyncio.get_running_loop().time() < deadline:
            ticket = runtime.signals.ticket(conversation_id)
            replies = await read_transcript(
                runtime.db, conversation_id, after_id=max(shown, result.message_id), roles=("assistant",)
            )
            if not replies and await _answered_by_nobody(runtime, result.message_id):
                typer.echo("(a person from the team has this conversation now: your message is saved for them)")
                break
            if replies:
                for entry in replies:
                    for block in entry.blocks:
                        text = (
                            block.text
                            if block.type == "text"
                            else f"[images] {' '.join(map(str, block.urls))} {block.caption or ''}"
                        )
                        typer.echo(f"agent> {text}")
                    shown = entry.id
                break
            await runtime.signals.wait(ticket, 0.5)


@app.command("eval")
def eval_scenarios(
    paths: Annotated[list[Path], typer.Argument(help="scenario files or folders (*.yaml)")],
    junit: Annotated[Path | None, typer.Option(help="also write a JUnit XML report here")] = None,
    select: Annotated[
        str | None, typer.Option("-k", help="run only scenarios whose name or path contains this")
    ] = None,
) -> None:
    """Run scenario files through the real pipeline and check what each turn did (docs/eval.md)."""
    from frontdesk.evals import run_all

    settings = _settings()
    logging.getLogger().setLevel(logging.WARNING)  # the report is the output; errors still show
    results = asyncio.run(run_all(paths, settings=settings, junit=junit, select=select))
    if not results:
        raise ConfigError(f"no scenario matched {select!r}")
    if not all(r.passed for r in results):
        raise typer.Exit(1)


async def _answered_by_nobody(runtime: Runtime, message_id: int) -> bool:
    """The message was consumed without an agent turn: AI is off for this thread (a hand-off)."""
    from frontdesk.platform.store.schema import Conversation, Message

    async with runtime.db.read() as session:
        row = await session.get(Message, message_id)
        conversation = await session.get(Conversation, row.conversation_id) if row else None
    return bool(
        row and row.processed_at is not None and row.turn_id is None and conversation and not conversation.ai_enabled
    )


def _read_line() -> str | None:
    """One line from the customer; a prompt only when a person is typing."""
    if not sys.stdin.isatty():
        line = sys.stdin.readline()
        return line.rstrip("\n") if line else None
    try:
        return input("you> ")
    except EOFError:
        return None


@accounts_app.command("add")
def accounts_add(
    channel: Annotated[str, typer.Argument(help="telegram, messenger, instagram, whatsapp, line, webchat")],
    account_id: Annotated[str, typer.Option("--id", help="the id in the webhook URL: 8-40 of A-Z a-z 0-9 _ -")],
    tenant: Annotated[str, typer.Option(help="the business this account serves (see `frontdesk tenants list`)")],
    name: Annotated[str | None, typer.Option(help="a label for operators")] = None,
    config: Annotated[list[str] | None, typer.Option("--config", help="key=value, repeatable")] = None,
    secret: Annotated[
        list[str] | None, typer.Option("--secret", help="key=value, repeatable; never shown again")
    ] = None,
) -> None:
    """Create or update a channel account and print its webhook URL."""
    import re

    from frontdesk.cli_accounts import ACCOUNT_ID_PATTERN, parse_pairs, upsert_account
    from frontdesk.ingestion.channels import CHANNELS
    from frontdesk.platform.clock import SystemClock
    from frontdesk.runtime import public_base_url

    if channel not in CHANNELS or channel == "terminal":
        raise ConfigError(f"unknown channel {channel!r} (known: {', '.join(c for c in CHANNELS if c != 'terminal')})")
    if not re.fullmatch(ACCOUNT_ID_PATTERN, account_id):
        raise ConfigError(f"account id {account_id!r}: use 8-40 of A-Z a-z 0-9 _ - (it is part of a URL)")
    settings = _settings()

    async def run() -> None:
        db = Database.from_url(settings.database_url)
        try:
            if await current_revision(db) is None:
                raise ConfigError("the database has no schema: run `frontdesk db upgrade` first")
            saved = await upsert_account(
                db,
                account_id=account_id,
                tenant_id=tenant,
                channel=channel,
                name=name,
                config=parse_pairs(config or [], "--config"),
                secrets=parse_pairs(secret or [], "--secret"),
                now=SystemClock().now(),
                own_id=CHANNELS[channel].own_id,
            )
        finally:
            await db.dispose()
        typer.echo(f"{saved.channel} account {saved.id} (tenant {saved.tenant_id})")
        typer.echo(f"  config: {saved.config}")
        typer.echo(f"  secrets set: {', '.join(saved.secret_names) or 'none'}")
        path = f"/webchat/{saved.id}" if channel == "webchat" else f"/webhooks/{channel}/{saved.id}"
        typer.echo(f"  URL: {public_base_url(settings)}{path}")

    asyncio.run(run())


@app.command("loyalty-mcp")
def loyalty_mcp(
    db: Annotated[Path, typer.Option(help="the loyalty service's SQLite file (created and seeded if new)")] = Path(
        "./loyalty.db"
    ),
    transport: Annotated[str, typer.Option(help="stdio (spawned by frontdesk) or http (Streamable HTTP)")] = "stdio",
    host: Annotated[str, typer.Option(help="bind address for http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port for http; the endpoint is http://HOST:PORT/mcp")] = 8765,
) -> None:
    """Run the loyalty pack's domain service as an MCP server (100 tools over 8 domains)."""
    if transport not in ("stdio", "http"):
        raise ConfigError(f"unknown transport {transport!r} (use stdio or http)")
    from frontdesk.packs.loyalty.server import main as serve_loyalty

    serve_loyalty("stdio" if transport == "stdio" else "http", db, host=host, port=port)


@receipts_app.command("replay")
def receipts_replay(
    receipt_id: Annotated[int, typer.Argument(help="a failed or partial delivery receipt")],
    include_sending: Annotated[
        bool, typer.Option(help="also a receipt stuck at 'sending' (its process died; check the thread first)")
    ] = False,
) -> None:
    """Resend the parts of a delivery that did not go out (never the ones that did)."""
    settings = _settings()

    async def run() -> str:
        runtime = Runtime.build(settings)
        try:
            return await runtime.deliverer.replay(receipt_id, include_sending=include_sending)
        finally:
            await runtime.close()

    typer.echo(f"receipt {receipt_id}: {asyncio.run(run())}")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # a line per platform call is noise at INFO
    # Every command checks the schema's revision; only `db upgrade` reports what it migrates.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        app()
    except ConfigError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        sys.exit(2)
    except FrontdeskError as exc:  # e.g. a receipt that is not replayable
        typer.echo(f"error: {exc.message}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
