"""Reports: the four daily charts count this tenant's turns, latencies, rejections and hand-offs."""

from __future__ import annotations

from console_kit import build_console, client, sign_in
from sqlalchemy import select

from frontdesk.humans.console.reports import DAYS, daily_series
from frontdesk.humans.tasks import hand_off
from frontdesk.platform.store.schema import ClaimRejection, TurnTrace


async def test_daily_series_count_only_this_tenants_turns_rejections_and_handoffs(db):
    console = await build_console(db)
    first = await console.customer_says("demo-webchat", "r1", "hi")
    await console.customer_says("demo-webchat", "r2", "hello")
    await console.drain()
    async with db.transaction() as session:
        turn = await session.scalar(select(TurnTrace.id).where(TurnTrace.conversation_id == first))
        assert turn is not None
        session.add(
            ClaimRejection(
                conversation_id=first,
                turn_id=turn,
                attempt=1,
                claims=[],
                failures=[],
                reply_text="x",
                created_at=console.clock.now(),
            )
        )
        await hand_off(
            session,
            tenant_id="demo",
            conversation_id=first,
            reason="wants a person",
            run_key="r",
            now=console.clock.now(),
        )

    turns, latency, rate, handoffs = await daily_series(console.deps, "demo", console.clock.now())

    assert len(turns.points) == DAYS
    assert turns.points[-1][1] == 2  # the other tenant's turn is not counted
    assert latency.points[-1][1] > 0
    assert latency.unit == "ms"
    assert rate.points[-1][1] == 50.0
    assert handoffs.points[-1][1] == 1
    assert all(value == 0 for _, value in turns.points[:-1])


async def test_reports_page_draws_four_charts(db):
    console = await build_console(db)
    async with client(console) as http:
        await sign_in(http)
        page = await http.get("/console/reports")

    assert page.status_code == 200
    assert page.text.count("<svg") == 4
    for title in ("Turns per day", "Median reply latency", "Claim-rejection rate", "Hand-offs"):
        assert title in page.text
