"""The loyalty pack's router: every domain a message needs, read-only when unsure, side questions
that keep a flow, and confirmation only where a flow (or a proposed action) waits for it.

The messages here are written for these tests; none is taken from the benchmark's labelled sets."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from frontdesk.capabilities.policy import (
    ASKING_INTENTS,
    CONFIRMED_SIGNAL,
    MIN_WRITE_CONFIDENCE,
    PENDING_CONFIRMATION_PHASE,
    RoutingDecision,
    ToolPolicy,
    ToolPolicyCatalog,
)
from frontdesk.capabilities.tools import Tool
from frontdesk.reasoning.action_router import QUESTION_SIGNAL, ActionLexicon, ActionRouter
from frontdesk.reasoning.router import RouterState

LEXICON = Path(__file__).parents[2] / "src/frontdesk/packs/loyalty/data/lexicon.json"


@pytest.fixture(scope="module")
def router() -> ActionRouter:
    return ActionRouter(ActionLexicon(**json.loads(LEXICON.read_text(encoding="utf-8"))))


IDLE = RouterState()


def in_flow(phase: str) -> RouterState:
    return RouterState(workflow_phase=phase, workflow_domains=frozenset({"rule"}))


@pytest.mark.parametrize(
    ("text", "intent", "domains", "language"),
    [
        ("Which rules does campaign Tet 2026 have?", "list", {"campaign", "rule"}, "en"),
        ("Chiến dịch Tết có những quy tắc nào?", "list", {"campaign", "rule"}, "vi"),
        ("Create a new rule for the summer campaign", "create", {"campaign", "rule"}, "en"),
        ("Tạo voucher giảm giá cho hạng vàng", "create", {"voucher", "tier"}, "vi"),
        ("Pause campaign Back to School", "pause", {"campaign"}, "en"),
        ("What is member M-0042's point balance?", "detail", {"member"}, "en"),
        ("Báo cáo hiệu quả chiến dịch tháng này", "report", {"report", "campaign"}, "vi"),
    ],
)
def test_a_message_gets_its_action_and_every_domain_it_needs(router, text, intent, domains, language):
    decision = router.route(text, IDLE)

    assert (decision.intent, set(decision.domains), decision.language) == (intent, domains, language)
    assert decision.confidence >= 0.6
    assert not decision.side_query


@pytest.mark.parametrize("text", ["create", "tạo giúp tôi cái mới", "please delete it", "xóa đi", "hello there", "ok"])
def test_unknown_messages_even_with_a_write_verb_stay_below_the_write_threshold(router, text):
    decision = router.route(text, IDLE)

    assert decision.intent == "unknown"
    assert decision.confidence < 0.6
    assert decision.domains == frozenset()


def test_a_question_mid_flow_is_a_side_query_that_keeps_the_flow(router):
    decision = router.route("Wait, which vouchers are active right now?", in_flow("formula"))

    assert decision.side_query
    assert decision.phase == "formula"
    assert set(decision.domains) == {"rule", "voucher"}


def test_confirmation_counts_only_while_the_flow_waits_for_it(router):
    at_review = router.route("yes, go ahead", in_flow("review"))
    mid_flow = router.route("yes", in_flow("formula"))
    idle = router.route("yes", IDLE)

    assert (at_review.intent, "confirmed" in at_review.signals) == ("submit", True)
    assert (mid_flow.intent, "confirmed" in mid_flow.signals) == ("continue", False)
    assert (idle.intent, "confirmed" in idle.signals) == ("unknown", False)
    assert router.route("đồng ý", in_flow("review")).intent == "submit"


def test_cancel_ends_the_flow_in_either_language(router):
    assert router.route("cancel that please", in_flow("criteria")).intent == "cancel"
    assert router.route("thôi hủy đi", in_flow("criteria")).intent == "cancel"


def _tool(name: str) -> Tool:
    from pydantic import BaseModel

    async def handler(arguments, context):
        return {}

    return Tool(name, name, BaseModel, handler)


def test_a_side_query_bundle_adds_read_tools_and_only_the_flows_own_writes():
    policies = {
        "voucher_list": ToolPolicy(frozenset({"voucher"}), "read"),
        "voucher_issue": ToolPolicy(frozenset({"voucher"}), "create", risk="medium"),
        "rule_draft_set_formula": ToolPolicy(frozenset({"rule"}), "update", phases=frozenset({"formula"})),
        "rule_delete": ToolPolicy(frozenset({"rule"}), "delete", risk="high"),
    }
    catalog = ToolPolicyCatalog([_tool(n) for n in policies], policies, discovery_domains={"voucher", "rule"})
    side = RoutingDecision("list", frozenset({"rule", "voucher"}), 0.8, "formula", side_query=True)

    assert catalog.bundle(side).tool_names == ["voucher_list", "rule_draft_set_formula"]


# -- entity ids name their domain


@pytest.mark.parametrize(
    ("text", "intent", "domains"),
    [
        ("resume cmp_0012", "activate", {"campaign"}),
        ("copy rul_0031 into cmp_0002", "clone", {"rule", "campaign"}),
        ("rwd_0017 needs 40 more units, restock it", "restock", {"reward"}),
        ("push vch_0440 back by ten days", "extend", {"voucher"}),
        ("refresh seg_0011 please", "refresh", {"segment"}),
        ("rename seg_0003 to Weekday regulars", "update", {"segment"}),
        ("is FD-Q7RT-22KM still valid?", "detail", {"voucher"}),
        ("cancel rdm_0210", "revoke", {"reward"}),
        ("put mem_0318 in platinum", "assign", {"member", "tier"}),
    ],
)
def test_an_entity_id_or_code_is_enough_to_name_the_domain(router, text, intent, domains):
    decision = router.route(text, IDLE)

    assert (decision.intent, set(decision.domains)) == (intent, domains)
    assert decision.confidence >= MIN_WRITE_CONFIDENCE


# -- the verbs the tool list implies, in both languages


@pytest.mark.parametrize(
    ("text", "intent", "domain"),
    [
        ("disable the loyalty rule rul_0040", "deactivate", "rule"),
        ("switch the cinema reward off for now", "deactivate", "reward"),
        ("tắt quy tắc rul_0040 đi", "deactivate", "rule"),
        ("vô hiệu hóa hội viên mem_0700", "deactivate", "member"),
        ("turn rule rul_0040 back on", "activate", "rule"),
        ("bật lại quy tắc rul_0040", "activate", "rule"),
        ("enrol Mai Anh as a member, phone 0912 000 111", "enrol", "member"),
        ("đăng ký hội viên cho chị Hoa, sđt 0912 000 111", "enrol", "member"),
        ("recalculate the tier of mem_0505", "evaluate", "tier"),
        ("tính lại hạng cho hội viên mem_0505", "evaluate", "tier"),
        ("xét lại hạng thành viên mem_0505", "evaluate", "tier"),
        ("làm mới nhóm seg_0006 giúp anh", "refresh", "segment"),
        ("nhập thêm 30 bình giữ nhiệt cho phần thưởng rwd_0008", "restock", "reward"),
        ("gia hạn voucher vch_0099 thêm 5 ngày", "extend", "voucher"),
        ("log a sale of 420,000 VND for mem_0612", "record", "member"),
        ("ghi nhận giao dịch 300.000đ cho hội viên mem_0612", "record", "member"),
        ("transfer 250 points from mem_0001 to mem_0002", "transfer", "member"),
        ("chuyển 250 điểm của mem_0001 cho mem_0002", "transfer", "member"),
        ("award mem_0612 150 bonus points for the referral", "earn", "member"),
        ("trừ 80 điểm của mem_0612 vì nhập sai", "adjust", "member"),
        ("wind down cmp_0010 for good", "end", "campaign"),
        ("kết thúc chương trình cmp_0010", "end", "campaign"),
        ("bump the priority of rul_0009 to 300", "prioritize", "rule"),
        ("đặt độ ưu tiên của quy tắc rul_0009 là 300", "prioritize", "rule"),
        ("unlock the tier of mem_0333", "unlock", "tier"),
        ("add mem_0333 to seg_0004", "add", "segment"),
        ("loại mem_0333 khỏi nhóm seg_0004", "remove", "segment"),
        ("mark every overdue voucher as expired", "expire", "voucher"),
        # everyday words for these kinds of change (issue 22)
        ("retire reward rwd_0009", "delete", "reward"),
        ("get rid of seg_0004", "delete", "segment"),
        ("generate 50 vouchers for seg_0002", "issue", "voucher"),
        ("increase the stock of rwd_0002 to 200", "restock", "reward"),
        ("tăng tồn kho rwd_0002 thêm 30", "restock", "reward"),
        ("freeze campaign cmp_0004", "pause", "campaign"),
        ("hoãn chiến dịch cmp_0004", "pause", "campaign"),
        ("top up mem_0019 with 300 points", "earn", "member"),
        ("take back 150 points from mem_0019", "adjust", "member"),
        ("thu lại 150 điểm của mem_0019", "adjust", "member"),
        ("lock the account of 0912 345 678", "deactivate", "member"),  # a phone number is a member's
        ("revoke XMAS-7QP2-KD4M", "revoke", "voucher"),  # a voucher code with a longer prefix
        ("cong 150 diem cho mem_0530", "earn", "member"),  # no diacritics, an amount between the words
        ("cut the price of rwd_0031 to 800 points", "update", "reward"),
        ("Deactivate mem_0530, it is a duplicate account", "deactivate", "member"),
        ("put mem_0530 on gold", "assign", "tier"),
        ("xét hạng lại cho mem_0530", "evaluate", "tier"),
        ("add a rule to cmp_0021", "create", "rule"),
        # said as staff say it (the second tuning set, session 35)
        ("mem_0530 was credited twice, take the 300 back", "adjust", "member"),
        ("mem_0530 bought 450k of coffee at the counter", "record", "member"),
        ("rwd_0031 should be 800 points from now on", "update", "reward"),
        ("pull rwd_0031 from the catalogue", "deactivate", "reward"),
        ("kill voucher vch_0099", "delete", "voucher"),
        ("put 50 more rwd_0002 in", "restock", "reward"),
        ("thêm 20 cái rwd_0002 vào kho", "restock", "reward"),
        ("hạ mức thưởng của rul_0009 xuống 30 điểm", "update", "rule"),
        ("new segment: silver members in Đà Nẵng", "create", "segment"),
    ],
)
def test_each_verb_family_names_its_own_action(router, text, intent, domain):
    decision = router.route(text, IDLE)

    assert decision.intent == intent
    assert domain in decision.domains
    assert decision.confidence >= MIN_WRITE_CONFIDENCE


@pytest.mark.parametrize(
    ("text", "domains"),
    [
        ("dry-run a 900k purchase for mem_0100", {"rule", "member"}),
        ("thử tính điểm cho đơn 2.000.000đ của mem_0100", {"rule", "member"}),
        ("is mem_0100 eligible for rwd_0006?", {"member", "reward"}),
        ("preview seg_0002 with a minimum spend of 1M", {"segment"}),
    ],
)
def test_previews_simulations_and_eligibility_checks_are_reads(router, text, domains):
    decision = router.route(text, IDLE)

    assert decision.intent in ASKING_INTENTS
    assert domains <= set(decision.domains)


# -- Vietnamese typed without diacritics


@pytest.mark.parametrize(
    ("plain", "accented"),
    [
        ("tam dung chuong trinh cmp_0009", "tạm dừng chương trình cmp_0009"),
        ("tao quy tac moi cho chien dich cmp_0001", "tạo quy tắc mới cho chiến dịch cmp_0001"),
        ("xoa phan khuc seg_0010", "xóa phân khúc seg_0010"),
        ("so du cua hoi vien mem_0020 la bao nhieu", "số dư của hội viên mem_0020 là bao nhiêu"),
        ("danh sach qua doi diem", "danh sách quà đổi điểm"),
        # a one-syllable verb, in a message that two particles ("cai", "khong") mark as Vietnamese
        (
            "xoa cai chuong trinh nhap cmp_0002 di, nam nay khong lam nua",
            "xóa cái chương trình nháp cmp_0002 đi, năm nay không làm nữa",
        ),
    ],
)
def test_vietnamese_without_diacritics_routes_like_the_accented_text(router, plain, accented):
    folded, written = router.route(plain, IDLE), router.route(accented, IDLE)

    assert (folded.intent, folded.domains, folded.language) == (written.intent, written.domains, "vi")


def test_text_in_decomposed_unicode_matches_like_composed_text(router):
    decomposed = unicodedata.normalize("NFD", "tạm dừng chiến dịch cmp_0004")

    assert router.route(decomposed, IDLE).intent == "pause"


@pytest.mark.parametrize(
    ("text", "not_domain"),
    [
        ("hang on, which rules run on weekends?", "tier"),  # "hạng" without its marks
        ("find the member called Tim Baker", "reward"),
        ("làm lại y như hôm qua nhé", "reward"),  # an accented message's "qua" is not "quà"
    ],
)
def test_a_folded_syllable_alone_is_not_taken_for_vietnamese(router, text, not_domain):
    assert not_domain not in router.route(text, IDLE).domains


# -- questions about a change are not requests for it


@pytest.mark.parametrize(
    "text",
    [
        "when will cmp_0007 end?",
        "did someone deactivate rul_0005?",
        "chiến dịch cmp_0007 kết thúc khi nào",
        "thời gian bắt đầu của chương trình cmp_0007",
        "tóm tắt chương trình cmp_0007",
        "quy tắc rul_0005 đã tắt chưa?",
        "phần thưởng rwd_0002 có đang bật không",
        "lịch sử đổi quà của hội viên mem_0009",
        "tỉ lệ sử dụng voucher tháng này",
        "how many vouchers were redeemed in March",
        "các mức điểm để lên hạng vàng",
        # a verb in the passive or the past describes what happened; it asks for nothing
        "liệt kê các voucher đã bị thu hồi",
        "list the vouchers that were revoked",
        "danh sách voucher đã thu hồi của chương trình cmp_0005",
        "tier change history for mem_0009, please",
        # whether a change is still possible is a question, not a request for it
        "thu hồi voucher vch_0099 bây giờ còn được không, hay nó đã dùng rồi?",
        "is it still possible to extend vch_0099?",
        # unaccented "hay" is "or" here, not the imperative "hãy"
        "rwd_0004 da nhap them hang chua hay van con 40 cai?",
    ],
)
def test_a_question_about_a_change_stays_read_only(router, text):
    decision = router.route(text, IDLE)

    assert decision.intent in ASKING_INTENTS
    assert decision.domains


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("could you pause cmp_0007?", "pause"),
        ("end cmp_0007?", "end"),
        ("tạm dừng cmp_0007 được không?", "pause"),
        ("em tắt giúp anh quy tắc rul_0005 nhé?", "deactivate"),
        ("có thể kích hoạt cmp_0007 không?", "activate"),
        ("mem_0052 is back with us, can you reactivate him?", "activate"),  # the request opens its sentence
        ("can we resume cmp_0007 now?", "activate"),
    ],
)
def test_a_request_put_as_a_question_is_still_a_request(router, text, intent):
    decision = router.route(text, IDLE)

    assert decision.intent == intent
    assert QUESTION_SIGNAL not in decision.signals


@pytest.mark.parametrize(
    ("text", "domains"),
    [
        ("how many points has mem_0300 got left", {"member"}),
        ("hội viên mem_0300 còn mấy điểm", {"member"}),
        ("how many members joined in October", {"member", "report"}),
        ("bao nhiêu khách đã đổi quà tuần này", {"member", "reward", "report"}),
    ],
)
def test_a_count_routes_to_what_it_counts_and_to_reports_only_over_a_collection(router, text, domains):
    decision = router.route(text, IDLE)

    assert set(decision.domains) == domains
    assert decision.intent in ASKING_INTENTS


@pytest.mark.parametrize(
    ("text", "domains"),
    [
        ("what criteria does seg_0012 use", {"segment"}),
        ("điều kiện của quy tắc rul_0002", {"rule"}),
        ("which criteria can I combine?", {"rule", "segment"}),
    ],
)
def test_criteria_belong_to_the_rule_or_segment_they_are_about(router, text, domains):
    assert set(router.route(text, IDLE).domains) == domains


# -- confirmations and cancellations


@pytest.mark.parametrize(
    "text",
    ["all correct", "looks right to me", "sounds good, save it", "chuẩn rồi", "ừ", "oke", "ok luôn", "làm đi", "chốt"],
)
def test_a_loose_confirmation_submits_at_review(router, text):
    decision = router.route(text, in_flow("review"))

    assert (decision.intent, CONFIRMED_SIGNAL in decision.signals) == ("submit", True)


@pytest.mark.parametrize("text", ["không, thôi", "đừng", "no, don't", "no", "không", "nope"])
def test_a_refusal_at_review_cancels(router, text):
    assert router.route(text, in_flow("review")).intent == "cancel"


def test_a_bare_no_or_a_trailing_thoi_is_no_cancel_while_the_flow_asks_for_details(router):
    assert router.route("no", in_flow("criteria")).intent != "cancel"
    assert router.route("chỉ áp dụng cho hạng bạc thôi", in_flow("criteria")).intent != "cancel"


def test_a_confirmation_that_asks_for_something_else_does_not_submit(router):
    decision = router.route("yes, but also show me the vouchers of mem_0001", in_flow("review"))

    assert CONFIRMED_SIGNAL not in decision.signals


# -- a proposal waiting for its confirmation (phase "confirm")

PROPOSED = RouterState(
    workflow_phase=PENDING_CONFIRMATION_PHASE, workflow_domains=frozenset({"confirmation", "member"})
)


@pytest.mark.parametrize("text", ["yes", "ok, go ahead", "đồng ý", "chuẩn rồi, làm đi"])
def test_a_confirmation_of_a_proposal_submits_it(router, text):
    decision = router.route(text, PROPOSED)

    assert (decision.intent, set(decision.domains), decision.phase) == ("submit", {"confirmation", "member"}, "confirm")
    assert decision.confidence == 0.9
    assert CONFIRMED_SIGNAL in decision.signals


@pytest.mark.parametrize("text", ["no", "không", "cancel that", "thôi, không cần"])
def test_a_refusal_of_a_proposal_cancels_it(router, text):
    decision = router.route(text, PROPOSED)

    assert (decision.intent, decision.phase) == ("cancel", "confirm")
    assert CONFIRMED_SIGNAL not in decision.signals


@pytest.mark.parametrize(
    "text",
    [
        "list the active campaigns",
        "yes, and which vouchers does mem_0001 hold?",
        "cancel voucher vch_0003",
        "tạm dừng chiến dịch cmp_0004",
        "what's the weather like",
    ],
)
def test_anything_else_while_a_proposal_waits_is_routed_as_a_new_request(router, text):
    decision = router.route(text, PROPOSED)

    assert decision == router.route(text, IDLE)
    assert (decision.phase, decision.side_query) == ("idle", False)
    assert CONFIRMED_SIGNAL not in decision.signals


# -- structural safety


@pytest.mark.parametrize("text", ["create it", "tạo đi", "delete", "làm giống hôm qua", "tao di", "turn it off"])
def test_a_vague_command_stays_unknown_and_unsure(router, text):
    decision = router.route(text, IDLE)

    assert (decision.intent, decision.domains) == ("unknown", frozenset())
    assert decision.confidence < MIN_WRITE_CONFIDENCE


def test_an_answer_to_the_flow_that_mentions_another_domain_continues_the_flow(router):
    state = RouterState(workflow_phase="formula:fixed_points", workflow_domains=frozenset({"rule"}))

    answer = router.route("50 points per purchase", state)
    question = router.route("which vouchers does mem_0011 hold?", state)

    assert (answer.intent, answer.side_query, answer.domains) == ("continue", False, frozenset({"rule"}))
    assert question.side_query
    assert "voucher" in question.domains


# -- several changes in one message

PAUSE_CAMPAIGN = ("pause", {"campaign"})
ISSUE_VOUCHER = ("issue", {"member", "voucher"})


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("halt cmp_0021 and then give mem_0530 a voucher", [PAUSE_CAMPAIGN, ISSUE_VOUCHER]),
        ("turn off rul_0044; switch on rul_0045", [("deactivate", {"rule"}), ("activate", {"rule"})]),
        (
            "tạm dừng cmp_0021 rồi tặng voucher cho mem_0530",
            [("pause", {"campaign"}), ("issue", {"member", "voucher"})],
        ),
        ("tam dung cmp_0021 va kich hoat cmp_0022", [("pause", {"campaign"}), ("activate", {"campaign"})]),
        # a clause of an unaccented Vietnamese message is read as Vietnamese even alone; "+" joins two
        ("doi ten rul_0003 thanh 'App +50', xong xoa seg_0006", [("update", {"rule"}), ("delete", {"segment"})]),
        ("delete rul_0044 + create a campaign 'Black Friday'", [("delete", {"rule"}), ("create", {"campaign"})]),
        # a clause that points back ("it", "nó", "…vào") is about what the one before named
        ("create a campaign and activate it", [("create", {"campaign"}), ("activate", {"campaign"})]),
        ("tạo nhóm VIP mới rồi thêm mem_0530 vào", [("create", {"segment"}), ("add", {"member", "segment"})]),
        # a question and a change: the question does not make the change a read
        (
            "which members redeemed rwd_0031? also restock it with 20",
            [("list", {"member", "reward"}), ("restock", {"member", "reward"})],
        ),
    ],
)
def test_each_change_of_a_message_that_asks_for_several_is_routed_on_its_own(router, text, parts):
    decision = router.route(text, IDLE)

    assert [(p.intent, set(p.domains)) for p in decision.parts] == parts
    assert [p["intent"] for p in decision.as_json()["parts"]] == [p[0] for p in parts]  # kept in the trace


@pytest.mark.parametrize(
    "text",
    [
        "list the campaigns and the rewards",  # one request about two things
        "pause cmp_0021",
    ],
)
def test_a_message_with_one_request_is_not_split(router, text):
    assert router.route(text, IDLE).parts == ()


def test_a_message_with_two_changes_is_offered_each_change_and_not_its_neighbours_writes():
    policies = {
        "campaign_pause": ToolPolicy(frozenset({"campaign"}), "update", home="campaign", actions=frozenset({"pause"})),
        "campaign_create": ToolPolicy(
            frozenset({"campaign"}), "create", home="campaign", actions=frozenset({"create"})
        ),
        "voucher_issue": ToolPolicy(
            frozenset({"voucher", "member"}), "create", home="voucher", actions=frozenset({"issue"})
        ),
        "member_update": ToolPolicy(frozenset({"member"}), "update", home="member", actions=frozenset({"update"})),
        "member_get": ToolPolicy(frozenset({"member"}), "read", home="member"),
    }
    catalog = ToolPolicyCatalog([_tool(n) for n in policies], policies, discovery_domains={"campaign"})
    pause = RoutingDecision("pause", frozenset({"campaign"}), 0.85, "idle")
    issue = RoutingDecision("issue", frozenset({"voucher", "member"}), 0.85, "idle")
    both = RoutingDecision("pause", frozenset({"campaign", "voucher", "member"}), 0.7, "idle", parts=(pause, issue))

    assert catalog.bundle(both).tool_names == ["campaign_pause", "voucher_issue", "member_get"]


# -- operation families


def test_a_write_is_offered_to_every_action_of_its_family_and_to_no_other():
    deactivate = ToolPolicy(frozenset({"member"}), "update", actions=frozenset({"deactivate"}), family="state")
    update = ToolPolicy(frozenset({"member"}), "update", actions=frozenset({"update"}), family="update")
    policies = {"member_deactivate": deactivate, "member_update": update}
    catalog = ToolPolicyCatalog([_tool(n) for n in policies], policies, discovery_domains=set())

    def offered(action: str) -> list[str]:
        return catalog.bundle(RoutingDecision(action, frozenset({"member"}), 0.85, "idle")).tool_names

    assert offered("pause") == ["member_deactivate"]  # "suspend member X": a state change
    assert offered("extend") == ["member_update"]
    assert offered("delete") == []


def test_an_unknown_family_is_refused_when_the_policy_is_declared():
    with pytest.raises(ValueError, match="family"):
        ToolPolicy(frozenset({"member"}), "update", family="tidy up")


def test_a_history_of_tier_changes_is_a_read():
    decision = ActionRouter(ActionLexicon(**json.loads(LEXICON.read_text(encoding="utf-8")))).route(
        "lịch sử lên xuống hạng của mem_0530", IDLE
    )

    assert decision.intent in ASKING_INTENTS or decision.intent == "detail"
