"""The episodic memory job: ask the ``utility`` model for a fresh snapshot, cap it, store it.

Runs as a background job (``summarize_conversation``), never on the reply's path. A model that
fails or answers nonsense leaves the previous snapshot in place; the job's error says why.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai import ModelRequest, SystemPromptPart, ToolCallPart, ToolDefinition, UserPromptPart
from pydantic_ai.models import ModelRequestParameters
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from frontdesk.context.episodic import CAPS, MAX_SERVICE_NAMES, EpisodicSnapshot
from frontdesk.platform.clock import Clock
from frontdesk.platform.models.gateway import ModelGateway
from frontdesk.platform.store.engine import Database
from frontdesk.platform.store.schema import EpisodicSnapshot as SnapshotRow
from frontdesk.platform.store.schema import Message

# The job's kind: a turn whose memory is due queues one per conversation (coalesced).
SUMMARIZE_CONVERSATION = "summarize_conversation"
TRANSCRIPT_MESSAGES = 30
SNAPSHOT_TOOL = "save_snapshot"
INSTRUCTIONS = f"""\
You keep a short memory of a customer conversation for the business's assistant.
Read the previous snapshot and the latest messages, then call `{SNAPSHOT_TOOL}` once with an
updated snapshot. Limits: summary_text <= {CAPS["summary_text"]} characters, last_intent <= {CAPS["last_intent"]},
at most {MAX_SERVICE_NAMES} interested_service_names, contact_preference <= {CAPS["contact_preference"]},
unresolved_question <= {CAPS["unresolved_question"]}, next_action <= {CAPS["next_action"]}.
Record service NAMES as the customer would say them, never ids. preferred_language is a
two-letter code (en, es, vi...)."""


class SnapshotUnusable(Exception):
    """The utility model's answer held no snapshot."""


def _snapshot_tool() -> ToolDefinition:
    return ToolDefinition(
        name=SNAPSHOT_TOOL,
        description="Store the updated conversation snapshot.",
        parameters_json_schema=EpisodicSnapshot.model_json_schema(),
    )


class EpisodicSummarizer:
    def __init__(self, db: Database, gateway: ModelGateway, clock: Clock) -> None:
        self._db = db
        self._gateway = gateway
        self._clock = clock

    async def run(self, conversation_id: str) -> EpisodicSnapshot:
        async with self._db.read() as session:
            previous = await session.get(SnapshotRow, conversation_id)
            rows = list(
                await session.scalars(
                    select(Message)
                    .where(Message.conversation_id == conversation_id, Message.processed_at.is_not(None))
                    .order_by(Message.processed_at.desc(), Message.id.desc())
                    .limit(TRANSCRIPT_MESSAGES)
                )
            )
            replies = int(
                await session.scalar(
                    select(func.count())
                    .select_from(Message)
                    .where(Message.conversation_id == conversation_id, Message.role == "assistant")
                )
                or 0
            )
        transcript = "\n".join(f"{m.role}: {_plain(m)}" for m in reversed(rows))
        before = json.dumps(previous.data if previous else {}, ensure_ascii=False)
        request = ModelRequest(
            parts=[
                SystemPromptPart(INSTRUCTIONS),
                UserPromptPart(f"Previous snapshot: {before}\n\nLatest messages:\n{transcript}"),
            ]
        )
        params = ModelRequestParameters(function_tools=[_snapshot_tool()], allow_text_output=True)
        response = await self._gateway.client("utility").request([request], params)
        snapshot = EpisodicSnapshot.model_validate(_snapshot_data(response.parts))
        snapshot = snapshot.model_copy(update={"turn_count": replies})
        now = self._clock.now()
        async with self._db.transaction() as session:
            # Two refreshes may race (two instances): one upsert, and an older summary never
            # overwrites a newer one.
            insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else postgresql_insert
            statement = insert(SnapshotRow).values(
                conversation_id=conversation_id, data=snapshot.model_dump(), replies_covered=replies, updated_at=now
            )
            await session.execute(
                statement.on_conflict_do_update(
                    index_elements=[SnapshotRow.conversation_id],
                    set_={"data": statement.excluded.data, "replies_covered": replies, "updated_at": now},
                    where=SnapshotRow.replies_covered <= replies,
                )
            )
        return snapshot


def _snapshot_data(parts: Any) -> dict[str, Any]:
    for part in parts:
        if isinstance(part, ToolCallPart) and part.tool_name == SNAPSHOT_TOOL:
            args = part.args_as_dict()
            if isinstance(args, dict):
                return args
        content = getattr(part, "content", None)
        if isinstance(content, str) and "{" in content:
            try:
                data = json.loads(content[content.index("{") : content.rindex("}") + 1])
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    raise SnapshotUnusable("the utility model returned no snapshot")


def _plain(message: Message) -> str:
    if message.content_type != "blocks":
        return message.content[:1000]
    try:
        blocks = json.loads(message.content)
    except ValueError:
        return message.content[:1000]
    return " ".join(str(b.get("text") or b.get("caption") or "[images]") for b in blocks)[:1000]
