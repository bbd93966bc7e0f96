"""One typed settings object. Every field is documented in ``docs/configuration.md``.

Sources, highest priority first: keyword arguments, environment variables ``FRONTDESK_*``,
the TOML file named by ``FRONTDESK_CONFIG`` (default ``./frontdesk.toml`` if it exists), defaults.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

DEFAULT_CONFIG_FILE = "frontdesk.toml"
_HOST_NAME = re.compile(r"(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FRONTDESK_", extra="forbid", frozen=True)

    # -- storage
    database_url: str = "sqlite+aiosqlite:///./frontdesk.db"
    # ``frontdesk demo`` (and ``chat`` without ``--tenant``) run the demo business in a database of
    # their own, so trying the demo never puts a demo chat into a business's database.
    demo_database_url: str = "sqlite+aiosqlite:///./frontdesk-demo.db"
    # Connections each instance keeps open to PostgreSQL (docs/operations.md "Connection pools").
    database_pool_size: int = Field(default=10, ge=1, le=200)
    media_dir: Path = Path("./media")
    # Where re-hosted customer media lives: this machine's ``media_dir`` or an S3-compatible bucket.
    media_store: Literal["local", "s3"] = "local"
    s3_bucket: str | None = None
    # Unset: AWS; set for MinIO, R2, Ceph... Not in repr: it may carry user:password@.
    s3_endpoint_url: str | None = Field(default=None, repr=False)
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = Field(default=None, repr=False)
    s3_secret_access_key: str | None = Field(default=None, repr=False)

    # -- HTTP server
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    # How long an idle HTTP connection is kept open. Longer than the idle timeout of whatever
    # reuses connections to us (a load balancer: 60 s on AWS ALB; a platform's webhook client),
    # or it may send on a connection we are closing and get no answer.
    http_keep_alive_s: int = Field(default=75, ge=1, le=3600)
    public_url: str | None = None
    # Proxies (IP addresses or CIDR networks; "*" for any) whose X-Forwarded-For and
    # X-Forwarded-Proto headers are believed. Empty: none, the peer's own address is the client's.
    forwarded_allow_ips: list[str] = Field(default_factory=list)
    # The API's own documentation pages (/docs, /redoc) and /openapi.json.
    api_docs_enabled: bool = True

    # -- models (slot strings; see docs/configuration.md)
    model_chat: str | None = None
    model_utility: str | None = None
    model_embeddings: str | None = None
    # Voice notes: a multimodal model that takes audio input. Unset: the chat slot transcribes.
    model_transcription: str | None = None
    # -- the embedded model (``local:`` slots; platform/models/local.py)
    # Where the verified GGUF file is assembled once; unset: ~/.cache/frontdesk/models.
    model_cache_dir: Path | None = None
    local_model_threads: int | None = Field(default=None, ge=1, le=256)  # unset: the machine's cores
    local_model_context: int = Field(default=8192, ge=2048, le=131072)
    # Evaluated prompts the embedded model keeps in memory (MB; 0: none), so the shared start of
    # every chat prompt is evaluated once, not again after each other kind of request.
    local_model_state_cache_mb: int = Field(default=256, ge=0, le=16384)
    # With no chat model configured, ``demo`` and ``chat`` use the built-in embedded model when it is
    # installed (the ``local`` extra); false: the scripted offline demo, which answers at once.
    demo_local_model: bool = True

    # -- jobs
    # Jobs (turns among them) each process runs at once.
    workers: int = Field(default=8, ge=0, le=64)
    # ``serve`` and ``demo`` run the jobs in this many processes beside the HTTP one, so turn CPU
    # never delays a webhook's acknowledgement. Unset: one on SQLite (one writer at a time anyway),
    # on PostgreSQL one per core but one, up to four. 0: jobs run in the HTTP process.
    worker_processes: int | None = Field(default=None, ge=0, le=32)
    job_max_attempts: int = Field(default=5, ge=1)
    job_backoff_s: float = Field(default=2.0, gt=0)
    job_lease_s: float = Field(default=60.0, gt=0)
    sweeper_interval_s: float = Field(default=5.0, gt=0)
    poll_interval_s: float = Field(default=1.0, gt=0)

    # -- turn assembler
    quiet_window_s: float = Field(default=1.5, ge=0)
    quiet_window_cap_s: float = Field(default=10.0, ge=0)
    media_ready_timeout_s: float = Field(default=20.0, ge=0)
    lease_ttl_s: float = Field(default=30.0, gt=0)
    # A model outage is retried by the turn's job only while the burst's first message is younger
    # than this; the next failure after it sends the hold message (a vendor that accepts requests
    # and never answers would otherwise hold the customer for every attempt's timeouts).
    model_outage_budget_s: float = Field(default=90.0, gt=0)
    # Chat-model turns each tenant may start per hour and per day, on its own clock (0: no limit).
    # Past one, customers get the pack's hold message and a reply task, and the owners one
    # notification per window (platform/model_budget.py; docs/security.md "Model budget").
    model_turns_per_hour: int = Field(default=300, ge=0)
    model_turns_per_day: int = Field(default=2000, ge=0)

    # -- generation loop
    max_steps: int = Field(default=8, ge=1, le=64)
    model_timeout_s: float = Field(default=60.0, gt=0)
    memory_every_replies: int = Field(default=4, ge=1)

    # -- memory budget of the chat slot (tokens; see context/budget.py)
    # Unset: the model family's published window (docs/configuration.md lists them).
    chat_context_window: int | None = Field(default=None, ge=4096)
    chat_history_max_tokens: int = Field(default=8000, ge=0)
    chat_response_reserve_tokens: int = Field(default=2048, ge=256)
    chat_tool_result_reserve_tokens: int = Field(default=4096, ge=256)
    chat_tool_schema_budget_tokens: int = Field(default=3000, ge=256)
    # auto: the short prompt for embedded (``local:``) models, the full one for the others.
    chat_prompt_style: Literal["auto", "full", "compact"] = "auto"

    # -- media (customer images and voice notes, re-hosted from the platforms)
    # Signs /media/m/ URLs; unset: a random key kept in <media_dir>/.signing-key.
    media_signing_key: str | None = Field(default=None, min_length=32, repr=False)
    media_url_ttl_s: float = Field(default=3600.0, gt=0)

    # -- MCP servers that packs get their tools from: name -> "stdio:<command>" or an http(s) URL
    mcp_servers: dict[str, str] = Field(default_factory=dict)

    # -- outbound calls to messaging platforms
    channel_timeout_s: float = Field(default=15.0, gt=0)

    # -- outbound requests to URLs a tenant or customer can influence (platform/outbound.py)
    # Host names or CIDR networks that may be reached although private or loopback (a self-hosted
    # webhook receiver on 10.0.0.5): everything else of that kind is refused.
    outbound_allow: list[str] = Field(default_factory=list)

    # -- web chat
    webchat_max_text_chars: int = Field(default=4000, ge=1)
    # Messages a minute (and the burst allowed at once) per session, client address and account;
    # past one: 429 with Retry-After. Counted per instance (ingestion/channels/webchat/limits.py).
    webchat_messages_per_minute_session: int = Field(default=12, ge=1)
    webchat_messages_per_minute_ip: int = Field(default=60, ge=1)
    webchat_messages_per_minute_account: int = Field(default=600, ge=1)

    # -- credential vault (platform/vault.py; docs/operations.md "Key management")
    # The master key: 32 bytes, base64 (several, comma-separated, newest first, while rotating).
    # Or a file holding it. Neither: development mode, the vault is read-only and channel secrets
    # stay in the plaintext column until a key is set (docs/configuration.md#credential-vault).
    vault_key: str | None = Field(default=None, repr=False)
    vault_key_file: Path | None = None
    vault_cache_ttl_s: float = Field(default=30.0, ge=0)

    # -- operator console (humans/console/)
    # Secure cookies; unset: secure unless the public URL is plain http (local development).
    console_secure_cookies: bool | None = None
    console_session_ttl_s: float = Field(default=12 * 3600.0, gt=0)
    console_login_max_attempts: int = Field(default=5, ge=1)
    console_login_max_attempts_per_ip: int = Field(default=30, ge=1)
    console_login_window_s: float = Field(default=300.0, gt=0)

    # -- operator notifications (humans/notifications/)
    # smtp://user:password@host:587 (STARTTLS) or smtps://...:465; unset: no e-mail route.
    smtp_url: str | None = Field(default=None, repr=False)
    notify_from: str | None = None
    notify_timeout_s: float = Field(default=10.0, gt=0)

    # -- catalog search (capabilities/search): weight of vector similarity when embeddings are set
    search_vector_weight: float = Field(default=0.5, ge=0, le=1)

    # -- operations (docs/operations.md)
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    otel_exporter: Literal["none", "console", "otlp"] = "none"
    otel_endpoint: str | None = None  # OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces
    otel_service_name: str = "frontdesk"
    metrics_enabled: bool = True
    # Where /metrics is served: its own listener (metrics_host:metrics_port), never the public
    # port unless metrics_token is set (then there, behind "Authorization: Bearer <token>").
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = Field(default=9464, ge=0, le=65535)
    metrics_token: str | None = Field(default=None, min_length=16, repr=False)
    # On SIGTERM: stop claiming, let running turns finish this long, then release what is left.
    shutdown_grace_s: float = Field(default=20.0, ge=0)

    @field_validator("metrics_port", mode="before")
    @classmethod
    def _no_metrics_listener(cls, value: object) -> object:
        # "" (an empty TOML value or environment variable) means no listener, as documented.
        return None if value == "" else value

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxies(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            if entry != "*":
                _network(entry)
        return entries

    @field_validator("outbound_allow")
    @classmethod
    def _outbound_allow(cls, entries: list[str]) -> list[str]:
        cleaned = [entry.strip().lower().rstrip(".") for entry in entries]
        for entry in cleaned:
            if not _HOST_NAME.fullmatch(entry):
                _network(entry)
        return cleaned

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = os.environ.get("FRONTDESK_CONFIG", DEFAULT_CONFIG_FILE)
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_file))


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    try:
        return ipaddress.ip_network(entry.strip(), strict=False)
    except ValueError:
        raise ValueError(f"{entry!r} is not an IP address or a CIDR network") from None
