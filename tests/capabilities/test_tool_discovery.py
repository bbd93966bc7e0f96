"""Tools found by search (issue 22): the tool cards' ranking, the second stage that widens an
unsure turn's bundle without a model request, and what ``find_tools`` may find. Whatever the
search ranks, the catalog's rules decide: reads as they are, writes only as proposals the user
confirms later, never a tool without a policy or outside its phases."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from frontdesk.capabilities.discovery import FIND_TOOLS, FIND_TOOLS_FROM
from frontdesk.capabilities.policy import ASKS_SIGNAL, RoutingDecision, ToolPolicy, ToolPolicyCatalog
from frontdesk.capabilities.tool_index import ToolIndex, tool_cards
from frontdesk.capabilities.tools import Tool, ToolContext

PHRASES = {
    "campaign_list": {"en": ["list campaigns", "which promotions are running"], "vi": ["danh sách chương trình"]},
    "campaign_pause": {
        "en": ["pause the campaign", "put the promotion on hold", "freeze the promo for now"],
        "vi": ["tạm dừng chương trình", "tạm ngưng khuyến mãi"],
    },
    "campaign_delete": {"en": ["delete the campaign", "scrap the promotion"], "vi": ["xoá chương trình"]},
    "reward_list": {
        "en": ["what can members redeem", "rewards under 700 points", "the gift catalogue"],
        "vi": ["danh sách quà", "quà dưới 700 điểm"],
    },
    "reward_restock": {"en": ["top up the stock", "add units of a gift"], "vi": ["nhập thêm quà vào kho"]},
    "member_get_balance": {"en": ["how many points does she have"], "vi": ["khách còn bao nhiêu điểm"]},
    "rule_validate_formula": {"en": ["is this formula valid"], "vi": ["kiểm tra công thức"]},
}
POLICIES = {
    "campaign_list": ToolPolicy(frozenset({"campaign"}), "read", home="campaign"),
    "campaign_pause": ToolPolicy(
        frozenset({"campaign"}), "update", phases=frozenset({"idle"}), actions=frozenset({"pause"})
    ),
    "campaign_delete": ToolPolicy(
        frozenset({"campaign"}),
        "delete",
        "high",
        frozenset({"idle"}),
        requires_confirmation=True,
        actions=frozenset({"delete"}),
    ),
    "reward_list": ToolPolicy(frozenset({"reward"}), "read", home="reward"),
    "reward_restock": ToolPolicy(
        frozenset({"reward"}), "update", phases=frozenset({"idle"}), actions=frozenset({"restock"})
    ),
    "member_get_balance": ToolPolicy(frozenset({"member"}), "read", home="member", discovery=False),
    # A step the staged flow runs itself: never the model's, however well its card matches.
    "rule_validate_formula": ToolPolicy(
        frozenset({"rule"}), "read", phases=frozenset({"staged_submit"}), discovery=False
    ),
}


class Args(BaseModel):
    pass


async def _noop(_args: Args, _ctx: ToolContext) -> dict[str, str]:
    return {}


def tool(name: str, description: str = "") -> Tool:
    return Tool(name, description or name.replace("_", " "), Args, _noop)


def proposal(tool: Tool, _policy: ToolPolicy) -> Tool:
    return Tool(tool.name, tool.description + " (Needs the user's confirmation.)", Args, _noop)


def catalog(extra: int = 0) -> ToolPolicyCatalog:
    """The tools above, plus ``extra`` filler reads (a catalog large enough for find_tools)."""
    tools = [tool(name) for name in POLICIES] + [tool(f"filler_{i}", "unrelated filler") for i in range(extra)]
    policies = {**POLICIES, **{f"filler_{i}": ToolPolicy(frozenset({"other"}), "read") for i in range(extra)}}
    domains = {name: policy.domains for name, policy in policies.items()}
    return ToolPolicyCatalog(
        tools,
        policies,
        discovery_domains={"campaign", "reward"},
        proposals=proposal,
        index=ToolIndex(tool_cards(tools, domains, PHRASES)),
    )


def decide(intent: str, domains=(), confidence: float = 0.85, signals=(), phase: str = "idle") -> RoutingDecision:
    return RoutingDecision(intent, frozenset(domains), confidence, phase, signals=tuple(signals))


@pytest.mark.parametrize(
    ("text", "best"),
    [
        ("freeze the Summer Splash promo", "campaign_pause"),
        ("tam dung chuong trinh Summer Splash", "campaign_pause"),  # typed without diacritics
        ("scrap that promotion", "campaign_delete"),
        ("what can a member get for 700 points?", "reward_list"),
        ("nhập thêm 20 cái ly vào kho", "reward_restock"),
    ],
)
def test_the_cards_rank_the_tool_a_request_is_worded_for_first(text, best):
    tools = [tool(name) for name in POLICIES]
    index = ToolIndex(tool_cards(tools, {n: p.domains for n, p in POLICIES.items()}, PHRASES))

    assert index.rank(text)[0].name == best


@pytest.mark.parametrize("text", ['NOT "pause" OR near*', "AND", "col:x NEAR(a b)", "会员积分查询", "x" * 100_000])
def test_any_text_is_a_query_never_a_search_syntax_error(text):
    index = ToolIndex(tool_cards([tool(name) for name in POLICIES], {}, PHRASES))

    index.rank(text, also=['cam"paign', "NOT"])  # no exception: words only, each one quoted


def test_a_message_with_no_word_on_any_card_ranks_nothing():
    index = ToolIndex(tool_cards([tool(name) for name in POLICIES], {}, PHRASES))

    assert index.rank("cmp_0003 ???") == []
    assert index.rank("hmm ok") == []


def test_an_unsure_turn_gets_the_reads_its_words_point_at_and_no_write_without_a_change():
    # "What can a member get for 700 points?" read as a question about members only.
    decision = decide("detail", {"member"}, confidence=0.7, signals=[ASKS_SIGNAL])

    offered = catalog().bundle(decision, "what can a member get for 700 points?").tool_names

    assert "reward_list" in offered
    assert not {"campaign_pause", "campaign_delete", "reward_restock"} & set(offered)


def test_a_change_the_router_could_not_place_gets_its_write_as_a_proposal_in_the_named_domain_only():
    # "freeze" is no verb the router knows: it read a campaign, named, and nothing to do.
    decision = decide("detail", {"campaign"}, confidence=0.7)

    bundle = catalog().bundle(decision, "freeze the Summer Splash promo for now")

    pause = bundle.resolve("campaign_pause")
    assert pause is not None
    assert "Needs the user's confirmation" in pause.description
    assert "reward_restock" not in bundle.tool_names  # another domain's write never rides along


def test_a_flow_step_that_matches_better_neither_is_offered_nor_hides_the_write_the_turn_may_have():
    step = "promo_draft_freeze"  # a flow's own step: its card matches the words best
    phrases = {**PHRASES, step: {"en": ["freeze the Summer Splash promo for now", "freeze the promo"]}}
    policies = {**POLICIES, step: ToolPolicy(frozenset({"campaign"}), "update", phases=frozenset({"draft"}))}
    tools = [tool(name) for name in policies]
    index = ToolIndex(tool_cards(tools, {n: p.domains for n, p in policies.items()}, phrases))
    catalog = ToolPolicyCatalog(tools, policies, discovery_domains=(), proposals=proposal, index=index)

    offered = catalog.bundle(decide("detail", {"campaign"}, confidence=0.7), "freeze the Summer Splash promo for now")

    assert "campaign_pause" in offered.tool_names
    assert step not in offered.tool_names


def test_the_same_words_put_as_a_question_get_no_write():
    decision = decide("detail", {"campaign"}, confidence=0.7, signals=[ASKS_SIGNAL])

    offered = catalog().bundle(decision, "is the Summer Splash promo frozen for now?").tool_names

    assert "campaign_pause" not in offered


def test_small_talk_is_not_widened():
    unsure = decide("unknown", confidence=0.2)

    # The entry reads every unsure turn gets, and nothing the words would add.
    assert catalog().bundle(unsure, "thanks, that's all for now").tool_names == catalog().bundle(unsure).tool_names


def test_a_question_the_router_placed_gets_the_one_read_its_words_clearly_point_at():
    decision = decide("detail", {"member"}, signals=[ASKS_SIGNAL])

    offered = catalog().bundle(decision, "which rewards can a member redeem for under 700 points?").tool_names

    assert "reward_list" in offered
    assert "member_get_balance" in offered  # the router's own reading stays


def test_find_tools_is_offered_on_every_turn_of_a_large_catalog_only():
    large, small = catalog(extra=FIND_TOOLS_FROM), catalog()

    assert FIND_TOOLS in large.bundle(decide("unknown", confidence=0.2)).tool_names
    assert FIND_TOOLS in large.bundle(decide("pause", {"campaign"})).tool_names
    assert FIND_TOOLS not in small.bundle(decide("pause", {"campaign"})).tool_names
    assert large.unpoliced() == []


def test_find_tools_finds_writes_only_as_proposals_and_never_a_flow_step_or_on_an_unsure_turn():
    large = catalog(extra=FIND_TOOLS_FROM)

    found = {t.name: t for t in large.search("pause the campaign", decide("detail", {"campaign"}, confidence=0.7))}
    assert "Needs the user's confirmation" in found["campaign_pause"].description

    assert "rule_validate_formula" not in [t.name for t in large.search("is this formula valid", decide("detail"))]
    unsure = decide("unknown", confidence=0.2)
    assert "campaign_pause" not in [t.name for t in large.search("pause the campaign", unsure)]
    assert "campaign_list" in [t.name for t in large.search("which promotions are running", unsure)]


def test_a_turn_too_unsure_for_a_write_gets_none_from_a_search_either():
    # A voice note the transcriber was unsure of: read as a pause, capped below the write threshold.
    unconfirmed = decide("pause", {"campaign"}, confidence=0.5, signals=["voice_unconfirmed"])
    large = catalog(extra=FIND_TOOLS_FROM)

    assert "campaign_pause" not in large.bundle(unconfirmed, "pause the Summer Splash promo").tool_names
    assert "campaign_pause" not in [t.name for t in large.search("pause the campaign", unconfirmed)]


def test_a_change_the_router_placed_also_gets_the_clearest_read_it_left_out_but_not_inside_a_flow():
    text = "pause the Summer Splash promo, and how many points does she have?"
    placed = decide("pause", {"campaign"})
    in_flow = decide("continue", {"campaign"}, confidence=0.8, phase="review")

    assert "member_get_balance" in catalog().bundle(placed, text).tool_names
    assert "member_get_balance" not in catalog().bundle(in_flow, text).tool_names
