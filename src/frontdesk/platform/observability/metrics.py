"""Prometheus metrics, one registry per app (tests and embedding apps never share counters).

Labels are bounded on purpose: a tenant, an outcome, a slot, a model, a tool *as the catalog
names it*, a claim rule. Never a conversation id, a message or a name the model made up: each
label value is a time series kept forever by the scraper.

Counters are bumped where things happen. The job queue's depth is read from the database when
``/metrics`` is scraped: the route awaits ``refresh_queue`` (one grouped query under a timeout)
before rendering, so the collector itself only reads a snapshot and never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from frontdesk.platform.store.engine import Database, DatabaseWork
from frontdesk.platform.store.schema import Job

log = logging.getLogger(__name__)

CONTENT_TYPE = CONTENT_TYPE_LATEST
MODEL_SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)
TURN_SECONDS_BUCKETS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0, 300.0)
# The job statuses of platform/jobs.py (not imported: jobs.py records lock takeovers through this
# package). "done" rows are history, not depth.
QUEUED = "queued"
QUEUE_STATUSES = (QUEUED, "running", "dead")


class QueueDepth(Collector):
    """``frontdesk_job_queue_depth{kind,status}`` and the age of the oldest due job, from the last
    snapshot. A (kind, status) seen once is reported as 0 when it empties, so the series drops to
    zero instead of vanishing (a vanished series looks like a scrape problem on a dashboard)."""

    def __init__(self) -> None:
        self._depth: dict[tuple[str, str], int] | None = None
        self._seen: set[tuple[str, str]] = set()
        self._oldest_due_s: float | None = None

    def update(self, depth: dict[tuple[str, str], int], oldest_due_s: float) -> None:
        self._seen.update(depth)
        self._depth = {key: depth.get(key, 0) for key in self._seen}
        self._oldest_due_s = oldest_due_s

    def clear(self) -> None:
        """The database did not answer: report nothing rather than stale numbers."""
        self._depth = None
        self._oldest_due_s = None

    def describe(self) -> Iterable[Metric]:
        return [self._depth_family(), self._age_family()]

    def collect(self) -> Iterable[Metric]:
        if self._depth is None or self._oldest_due_s is None:
            return []
        depth = self._depth_family()
        for (kind, status), value in sorted(self._depth.items()):
            depth.add_metric([kind, status], value)
        age = self._age_family()
        age.add_metric([], self._oldest_due_s)
        return [depth, age]

    @staticmethod
    def _depth_family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "frontdesk_job_queue_depth",
            "Jobs in the jobs table by kind and status (queued, running, dead), read at scrape time.",
            labels=["kind", "status"],
        )

    @staticmethod
    def _age_family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "frontdesk_job_queue_oldest_due_seconds",
            "How long the oldest queued job has been due without a worker claiming it (0: none waiting).",
        )


class DatabaseWorkCounts(Collector):
    """``frontdesk_db_transactions_total{intent}`` and ``frontdesk_db_statements_total``: the work
    this process has asked of its database (``Database.work``), read live at scrape time. Divided by
    ``frontdesk_turns_total`` they say how many transactions and statements a turn costs."""

    def __init__(self) -> None:
        self.work: DatabaseWork | None = None

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        if self.work is None:
            return []
        transactions, statements = self._families()
        transactions.add_metric(["write"], self.work.write_transactions)
        transactions.add_metric(["read"], self.work.read_transactions)
        statements.add_metric([], self.work.statements)
        return [transactions, statements]

    @staticmethod
    def _families() -> list[CounterMetricFamily]:
        return [
            CounterMetricFamily(
                "frontdesk_db_transactions",
                "Database transactions this process opened, by intent (write: may change rows; read: only reads).",
                labels=["intent"],
            ),
            CounterMetricFamily("frontdesk_db_statements", "SQL statements this process sent to its database."),
        ]


class Metrics:
    """Every metric frontdesk exports, registered on a registry of its own."""

    def __init__(self, *, process_metrics: bool = True) -> None:
        self.registry = CollectorRegistry()
        if process_metrics:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            GCCollector(registry=self.registry)
        r = self.registry
        self.turns = Counter(
            "frontdesk_turns", "Agent turns finished, by tenant and outcome.", ["tenant", "outcome"], registry=r
        )
        self.turn_seconds = Histogram(
            "frontdesk_turn_duration_seconds",
            "One turn from its start to the end of its delivery, by outcome.",
            ["outcome"],
            buckets=TURN_SECONDS_BUCKETS,
            registry=r,
        )
        self.model_seconds = Histogram(
            "frontdesk_model_request_duration_seconds",
            "One model request, by slot and configured model.",
            ["slot", "model"],
            buckets=MODEL_SECONDS_BUCKETS,
            registry=r,
        )
        self.model_tokens = Counter(
            "frontdesk_model_tokens",
            "Tokens the model provider counted, by slot, model and direction (input or output).",
            ["slot", "model", "direction"],
            registry=r,
        )
        self.model_errors = Counter(
            "frontdesk_model_errors", "Model requests that failed, by slot and model.", ["slot", "model"], registry=r
        )
        self.tool_calls = Counter(
            "frontdesk_tool_calls",
            "Tool calls the model made, by tool and result (ok, error, refused: not offered or bad arguments).",
            ["tool", "result"],
            registry=r,
        )
        self.replies_verified = Counter(
            "frontdesk_replies_verified",
            "Replies the verification gate judged, by verdict (accepted or rejected).",
            ["verdict"],
            registry=r,
        )
        self.claim_rejections = Counter(
            "frontdesk_claim_rejections",
            "Failed checks in rejected replies, by reason (the claim type or companion rule) and kind "
            "(claim: a claim the model filed; companion: a price, image or action it did not declare).",
            ["reason", "kind"],
            registry=r,
        )
        self.receipts = Counter(
            "frontdesk_receipts",
            "Delivery receipts reaching a final status (sent, partial, failed).",
            ["status"],
            registry=r,
        )
        self.lock_takeovers = Counter(
            "frontdesk_lock_takeovers",
            "Leases taken over from a holder whose lease had expired (conversation: the turn lock; "
            "job: a job re-queued after its worker stopped renewing).",
            ["lock"],
            registry=r,
        )
        self.refresh_errors = Counter(
            "frontdesk_metrics_refresh_errors",
            "Scrapes whose database-backed gauges could not be read (timeout or error).",
            registry=r,
        )
        self.queue = QueueDepth()
        r.register(self.queue)
        self.database = DatabaseWorkCounts()
        r.register(self.database)

    async def refresh_queue(self, db: Database, *, timeout_s: float = 2.0, now: datetime | None = None) -> bool:
        """Read the job queue's depth for the next render. Returns False (and reports no depth)
        when the database does not answer within ``timeout_s``."""
        try:
            depth, oldest_due_s = await asyncio.wait_for(_read_queue(db, now or datetime.now(UTC)), timeout_s)
        except Exception as exc:  # a scrape must still answer; the error counter says why data is missing
            log.warning("job queue depth not read for /metrics: %s", type(exc).__name__)
            self.refresh_errors.inc()
            self.queue.clear()
            return False
        self.queue.update(depth, oldest_due_s)
        return True

    def render(self, others: Sequence[bytes] = ()) -> bytes:
        """This registry's exposition, with ``others`` (the worker processes' expositions) added in."""
        own = generate_latest(self.registry)
        return merge([own, *others]) if others else own


def merge(expositions: Sequence[bytes]) -> bytes:
    """Several processes' expositions as one, as if one process had counted everything: samples
    of the same name and labels are added up (counters, histogram buckets and sums, the gauges
    of a count), except ``*_created``, which keeps the earliest. A family is described by the
    first exposition that has it."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for exposition in expositions:
        for family in text_string_to_metric_families(exposition.decode()):
            if family.name not in families:
                families[family.name] = Metric(family.name, family.documentation, family.type, family.unit)
                values[family.name] = {}
            summed = values[family.name]
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                if key not in summed:
                    summed[key] = sample.value
                elif sample.name.endswith("_created"):
                    summed[key] = min(summed[key], sample.value)
                else:
                    summed[key] += sample.value
    for name, family in families.items():
        for (sample_name, labels), value in values[name].items():
            family.add_sample(sample_name, dict(labels), value)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(list(families.values())))
    return generate_latest(registry)


class _Fixed(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


async def _read_queue(db: Database, now: datetime) -> tuple[dict[tuple[str, str], int], float]:
    async with db.read() as session:
        rows = (
            await session.execute(
                select(Job.kind, Job.status, func.count())
                .where(Job.status.in_(QUEUE_STATUSES))
                .group_by(Job.kind, Job.status)
            )
        ).all()
        oldest = await session.scalar(select(func.min(Job.run_after)).where(Job.status == QUEUED, Job.run_after <= now))
    if oldest is not None and not isinstance(oldest, datetime):  # min() over SQLite text bypasses the column type
        oldest = datetime.fromisoformat(str(oldest))
    if oldest is not None and oldest.tzinfo is None:
        oldest = oldest.replace(tzinfo=UTC)
    age = max((now - oldest).total_seconds(), 0.0) if oldest is not None else 0.0
    return {(str(kind), str(status)): int(n) for kind, status, n in rows}, age
