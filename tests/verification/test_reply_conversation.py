"""A reply is refused when it is not in the customer's language or says their message back; a
short reply, product names or a courtesy echo decide nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from frontdesk.context.ledgers import WorkingState
from frontdesk.verification import ReplyContent, verify

NOW = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)


def refused(text: str, language: str | None, message: str = "") -> list[str]:
    state = WorkingState(now=NOW, language=language, customer_message=message)
    return sorted({f.rule for f in verify(ReplyContent(text), [], state).failures})


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Hello! How can I help you with your printing today?", "vi"),
        ("Hi! We are happy to help. What would you like to print?", "es"),
        ("¡Hola! Con gusto te ayudamos. ¿Qué te gustaría imprimir para tu negocio?", "en"),
        ("Chào bạn! Shop có thể giúp gì cho bạn hôm nay?", "en"),
    ],
)
def test_a_reply_in_another_language_than_the_customer_is_refused(text, language):
    assert refused(text, language) == ["language"]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Chào bạn! Shop có thể giúp gì cho bạn hôm nay?", "vi"),
        ("Chao ban, shop co the giup gi cho ban?", "vi"),  # no accents: nothing told, nothing refused
        ("¡Hola! Con gusto te ayudamos. ¿Qué te gustaría imprimir?", "es"),
        ("Business cards, flyers, posters.", "es"),  # product names say nothing about the language
        ("OK!", "vi"),
        ("Hello! How can I help you today?", "fr"),  # a language the rule cannot tell: never refused
        ("Hello! How can I help you today?", None),
    ],
)
def test_a_reply_in_the_customer_language_or_too_short_to_tell_is_accepted(text, language):
    assert refused(text, language) == []


def test_a_reply_that_says_the_customer_message_back_is_refused():
    message = "do you have tote bags in black?"

    assert refused("Do you have tote bags in black?", "en", message) == ["echo"]
    assert refused("You asked: do you have tote bags in black?", "en", message) == ["echo"]


def test_a_reply_that_quotes_a_short_message_or_answers_at_length_is_accepted():
    assert refused("Thanks! Happy to help.", "en", "thanks!") == []
    assert refused("50 points per purchase. When should it apply?", "en", "50 points per purchase") == []
    long_answer = (
        "Do you have tote bags in black? We do: canvas tote bags come in natural and black, "
        "printed on one side or both."
    )
    assert refused(long_answer, "en", "do you have tote bags in black?") == []


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Xin lỗi, tôi không thể xác định được ngôn ngữ của bạn. Tôi sẽ trả lời bằng tiếng Việt.", "vi"),
        ("Xin lỗi, khách hàng đã viết bằng tiếng Việt nên tôi sẽ trả lời lại.", "vi"),
        ("Sorry, I will answer in Spanish from now on, the customer writes Spanish.", "en"),
    ],
)
def test_a_reply_about_the_conversation_languages_instead_of_the_question_is_refused(text, language):
    # What a 1.5B model wrote after being told its reply was in the wrong language.
    assert "internal" in refused(text, language)
