"""Tools from MCP servers, admitted the same way as our own: through the policy catalog.

An ``McpToolSource`` keeps one client session to a server (stdio subprocess, Streamable HTTP,
or an in-process server object in tests), lists its tools once, and wraps each as a ``Tool``
whose schema is the server's own input schema. Wrapping is not exposure: a pack's
``ToolPolicyCatalog`` decides what a turn sees, and a server tool without a policy is never
offered (``ToolPolicyCatalog.unpoliced`` names it, and the pack's contract test fails on it).

Arguments are validated against the server's JSON schema before the call, so a malformed call
is answered as a retry hint like any other tool's, not sent to the service. A tool error from
the server is a ``ToolFailure`` the model reads as is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp import Client, StdioServerParameters
from pydantic import BaseModel, ConfigDict, model_validator

from frontdesk.capabilities.tools import Tool, ToolContext, ToolEvidence, ToolFailure, ToolKind, ToolResult
from frontdesk.errors import ConfigError

log = logging.getLogger(__name__)

EvidenceHook = Callable[[str, Mapping[str, Any], Any], ToolEvidence]


def parse_target(value: str) -> StdioServerParameters | str:
    """``stdio:<command line>`` or an ``http(s)://…/mcp`` URL."""
    if value.startswith("stdio:"):
        argv = shlex.split(value[len("stdio:") :])
        if not argv:
            raise ConfigError(f"MCP server {value!r}: 'stdio:' needs a command")
        return StdioServerParameters(command=argv[0], args=argv[1:])
    if value.startswith(("http://", "https://")):
        return value
    raise ConfigError(f"MCP server {value!r}: use 'stdio:<command>' or an http(s) URL")


class McpArguments(BaseModel):
    """Arguments of an MCP tool, checked against the server's JSON schema (set per tool)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    json_schema: ClassVar[dict[str, Any]] = {}
    validator: ClassVar[Draft202012Validator | None] = None

    @model_validator(mode="before")
    @classmethod
    def _matches_the_schema(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("arguments must be a JSON object")
        if cls.validator is not None:
            problems = sorted(cls.validator.iter_errors(data), key=lambda e: list(e.absolute_path))
            if problems:
                raise ValueError("; ".join(_describe(p) for p in problems[:5]))
        return data

    def as_arguments(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def _describe(problem: Any) -> str:
    where = ".".join(str(p) for p in problem.absolute_path)
    return f"{where}: {problem.message}" if where else str(problem.message)


def arguments_model(name: str, schema: Mapping[str, Any]) -> type[McpArguments]:
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as exc:
        raise ConfigError(f"MCP tool {name!r} has an invalid input schema: {exc.message}") from exc
    return type(
        f"{name}_arguments",
        (McpArguments,),
        {"json_schema": dict(schema), "validator": Draft202012Validator(dict(schema))},
    )


def default_evidence(tool: str, arguments: Mapping[str, Any], output: Any) -> ToolEvidence:
    """Ids the result returned are citable references (``id`` and ``*_id`` keys, any depth); its
    phone numbers and e-mail addresses (``phone``/``email`` keys and their ``*_phone``/``*_email``
    kin) may be read back to the user (the gate's contact rule)."""
    fields = list(_fields(output))
    ids = {str(v) for k, v in fields if (k == "id" or k.endswith("_id")) and isinstance(v, str | int)}
    contacts = [v for k, v in fields if _is_contact_key(k) and isinstance(v, str) and v.strip()]
    return ToolEvidence(references=frozenset(ids), contacts=tuple(dict.fromkeys(contacts)))


_CONTACT_KEYS = ("phone", "email", "mobile", "phone_number")


def _is_contact_key(key: str) -> bool:
    return key in _CONTACT_KEYS or key.endswith(("_phone", "_email"))


def _fields(value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Every (key, value) of the objects in ``value``, any depth (bounded: 6 levels, 200 items a list)."""
    if depth > 6:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not isinstance(item, bool):
                yield key, item
            yield from _fields(item, depth + 1)
    elif isinstance(value, list):
        for item in value[:200]:
            yield from _fields(item, depth + 1)


@dataclass(frozen=True)
class McpToolInfo:
    name: str
    description: str
    input_schema: dict[str, Any]


class McpToolSource:
    """One MCP server: a session opened by ``connect`` and kept until ``close``."""

    def __init__(self, name: str, target: Any, *, read_timeout_s: float = 30.0) -> None:
        self.name = name
        self._target = target
        self._read_timeout_s = read_timeout_s
        self._client: Client | None = None
        self._session: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self.listed: list[McpToolInfo] = []

    async def connect(self) -> list[McpToolInfo]:
        """Open the session in a task of its own (the SDK's cancel scopes must be exited by the task
        that entered them, whoever later calls ``close``), then list the tools."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._session = asyncio.create_task(self._hold(ready), name=f"mcp:{self.name}")
        await ready
        assert self._client is not None
        listed = await self._client.list_tools()
        self.listed = [
            McpToolInfo(t.name, (t.description or "").strip(), dict(t.input_schema or {"type": "object"}))
            for t in listed.tools
        ]
        return self.listed

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        try:
            async with Client(self._target, read_timeout_seconds=self._read_timeout_s) as client:
                self._client = client
                ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(ConfigError(f"cannot connect to MCP server {self.name!r}: {exc}"))
            else:
                log.warning("MCP session %s ended: %s", self.name, exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None

    async def close(self) -> None:
        self._closing.set()
        if self._session is not None:
            with contextlib.suppress(Exception):
                await self._session
        self._session = None

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """The tool's JSON result; a server-side tool error becomes ``ToolFailure``."""
        if self._client is None:
            raise ToolFailure(f"the {self.name} service is not connected")
        result = await self._client.call_tool(tool, dict(arguments))
        text = " ".join(getattr(c, "text", "") for c in result.content).strip()
        if result.is_error:
            raise ToolFailure(text or f"{tool} failed")
        if result.structured_content is not None:
            return result.structured_content
        try:
            return json.loads(text) if text else {}
        except ValueError:
            return {"text": text}

    def tools(
        self, kinds: Mapping[str, ToolKind] | None = None, evidence: EvidenceHook = default_evidence
    ) -> list[Tool]:
        """Every listed tool as a ``Tool``; ``kinds`` marks actions (their results prove events)."""
        return [self._wrap(info, (kinds or {}).get(info.name, "retrieval"), evidence) for info in self.listed]

    def _wrap(self, info: McpToolInfo, kind: ToolKind, evidence: EvidenceHook) -> Tool:
        model = arguments_model(info.name, info.input_schema)

        async def handler(arguments: Any, context: ToolContext) -> ToolResult:
            given = arguments.as_arguments()
            output = await self.call(info.name, given)
            proof = evidence(info.name, given, output)
            if kind == "action":
                reference = next(iter(sorted(proof.references)), None)
                proof = ToolEvidence(
                    references=proof.references,
                    facts=proof.facts,
                    events=(*proof.events, (info.name, reference)),
                )
            return ToolResult(output, proof)

        return Tool(info.name, info.description, model, handler, kind, json_schema=info.input_schema)
