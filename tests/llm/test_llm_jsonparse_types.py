"""Lenient JSON parsing, yes/no probabilities and request validation."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from biorag.llm import (
    ChatRequest,
    ChatResponse,
    TokenLogprob,
    parse_json_lenient,
    yes_no_probability,
)

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": "yes"}',
        '```json\n{"answer": "yes"}\n```',
        'Sure! Here is the JSON:\n```\n{"answer": "yes"}\n```\nHope it helps.',
        'The answer is {"answer": "yes"} as requested. {"other": 1}',
        '{"answer": "yes",}',  # trailing comma: repaired
        "{'answer': 'yes'}",  # single quotes: repaired
        '```json\n{"answer": "yes"',  # truncated fence: repaired
    ],
)
def test_lenient_parsing_recovers_the_object(text: str) -> None:
    value, error = parse_json_lenient(text, SCHEMA)
    assert error is None
    assert value == {"answer": "yes"}


def test_lenient_parsing_of_arrays_and_no_schema() -> None:
    assert parse_json_lenient("Entities: [1, 2, 3] done") == ([1, 2, 3], None)
    assert parse_json_lenient('  {"a": [1, {"b": null}]}  ') == ({"a": [1, {"b": None}]}, None)


@pytest.mark.parametrize("text", ["", "   ", "I cannot answer that.", "yes"])
def test_lenient_parsing_reports_failure(text: str) -> None:
    value, error = parse_json_lenient(text, SCHEMA)
    assert value is None
    assert error


def test_schema_check_reports_missing_keys_and_wrong_type() -> None:
    value, error = parse_json_lenient('{"other": 1}', SCHEMA)
    assert value is None and "missing required keys ['answer']" in error
    value, error = parse_json_lenient("[1, 2]", SCHEMA)
    assert value is None and "object" in error
    # A later block that fits the schema wins over an earlier one that does not.
    assert parse_json_lenient('{"x": 1} then {"answer": "no"}', SCHEMA) == ({"answer": "no"}, None)


def _resp(*tokens: TokenLogprob) -> ChatResponse:
    return ChatResponse(text="", logprobs=list(tokens))


def test_yes_no_probability_normalizes_over_yes_and_no() -> None:
    first = TokenLogprob(
        token="Yes",
        logprob=math.log(0.6),
        top={
            "Yes": math.log(0.6),
            " yes": math.log(0.1),
            "No": math.log(0.2),
            "Maybe": math.log(0.1),
        },
    )
    p = yes_no_probability(_resp(first))
    assert p == pytest.approx(0.7 / 0.9)


def test_yes_no_probability_skips_leading_whitespace_and_handles_missing() -> None:
    space = TokenLogprob(token=" ", logprob=-0.01, top={" ": -0.01})
    no = TokenLogprob(token="NO", logprob=math.log(0.8), top={})
    assert yes_no_probability(_resp(space, no)) == pytest.approx(0.0)
    assert yes_no_probability(ChatResponse(text="yes")) is None
    other = TokenLogprob(token="Perhaps", logprob=-0.1, top={"Perhaps": -0.1})
    assert yes_no_probability(_resp(other)) is None


def test_chat_request_validates_messages() -> None:
    with pytest.raises(ValidationError):
        ChatRequest(messages=[])
    with pytest.raises(ValidationError):
        ChatRequest(messages=[{"role": "robot", "content": "hi"}])
    req = ChatRequest(
        messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    )
    assert req.last_user_message() == "a"
    assert req.stage == "default" and req.max_tokens is None


@pytest.mark.parametrize(
    ("text", "answer", "thinking"),
    [
        ("<think>a\nb</think>\n\nYes", "Yes", "a\nb"),
        ("  <think></think>No", "No", None),  # empty thinking: no reasoning, tags gone
        ("<think>\n\n</think>Yes", "Yes", None),
        ("<think>cut off while thinking", "", "cut off while thinking"),
        ("Yes <think>not leading</think>", "Yes <think>not leading</think>", None),
        ("plain answer", "plain answer", None),
        # <think> was in the prompt (DeepSeek-R1, QwQ templates): only the end tag is generated
        ("The passages say B.\n</think>\n\nB", "B", "The passages say B."),
        ("\n\n</think>\n\nYes", "Yes", None),
        ("a </think> b </think> c", "b </think> c", "a"),  # the first end tag ends it
    ],
)
def test_split_reasoning(text: str, answer: str, thinking: str | None) -> None:
    from biorag.llm.base import split_reasoning

    assert split_reasoning(text) == (answer, thinking)


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        (
            'Check the schema.\n</think>\n{"answer": "yes"}',
            '{"answer": "yes"}',
            "Check the schema.",
        ),
        ('<think>\n\n</think>{"answer": "yes"}', '{"answer": "yes"}', None),
    ],
)
def test_attach_parsed_moves_thinking_out_of_the_answer(
    text: str, answer: str, reasoning: str | None
) -> None:
    from biorag.llm.base import attach_parsed

    resp = attach_parsed(
        ChatRequest(messages=[{"role": "user", "content": "q"}], json_schema=SCHEMA),
        ChatResponse(text=text),
    )
    assert (resp.text, resp.reasoning) == (answer, reasoning)
    assert resp.parsed == {"answer": "yes"} and resp.parse_error is None
