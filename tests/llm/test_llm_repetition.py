"""Degenerate repetition: loops found at the end of an answer and cut back to their first copy;
truncated JSON lists keep their complete items; the cut is recorded and counted per stage."""

from __future__ import annotations

import json

import pytest

from biorag.extract.parsing import parse_claim_lines
from biorag.llm import LLM, ChatRequest, MockBackend
from biorag.llm.jsonparse import complete_items, parse_json_lenient
from biorag.llm.repetition import cut_repetition, find_loop

TRIPLET_SCHEMA = {"type": "array", "items": {"type": "object"}}


def triplet(obj: str) -> dict[str, str]:
    return {"subject": "aspirin", "subject_type": "Drug", "relation": "treats",
            "object": obj, "object_type": "Disease"}  # fmt: skip


def test_repeated_claim_line_is_cut_to_one_copy() -> None:
    good = "CLAIM: Aspirin lowers fever in adults.\n"
    loop = "CLAIM: Aspirin reduces the risk of stroke in adults over 50.\n"
    text = good + loop * 30 + "CLAIM: Aspirin red"
    cut, removed = cut_repetition(text)
    assert cut == good + loop.strip()
    assert removed == len(text) - len(cut)
    assert parse_claim_lines(cut) == [good[7:].strip(), loop[7:].strip()]


def test_repeated_multiline_block_is_cut() -> None:
    head = "CLAIM: Metformin lowers HbA1c.\nSUBJECT: metformin\nPREDICATE: lowers\nOBJECT: HbA1c\n"
    block = "CLAIM: A causes B in mice.\nSUBJECT: A\nPREDICATE: causes\nOBJECT: B\n\n"
    loop = find_loop(head + block * 8 + "CLAIM: A cau")
    assert loop is not None and loop.rule == "span" and loop.copies >= 8
    assert cut_repetition(head + block * 8)[0] == (head + block).strip()


def test_short_unit_needs_a_long_run() -> None:
    assert find_loop("yes yes yes yes") is None
    assert find_loop("The answer is " + "no " * 20) is None  # 20 tokens < 5 x 8
    cut, _ = cut_repetition("The answer is " + "no " * 60)
    assert cut == "The answer is no"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "CLAIM: A.\nCLAIM: B.\nCLAIM: C.\n",
        "SUBJECT: aspirin\nPREDICATE: treats\nOBJECT: pain",
        '{"1": "yes", "2": "no", "3": "yes", "4": "yes", "5": "yes", "6": "no"}',
        "CLAIM: X is Y.\n" * 3,  # three copies: below the line rule's four
        "}\n" * 12,  # closing brackets of pretty-printed JSON are not a looping line
        " ".join(f"word{i}" for i in range(500)),
    ],
)
def test_no_loop(text: str) -> None:
    assert find_loop(text) is None
    assert cut_repetition(text) == (text, 0)


def test_json_list_loop_keeps_complete_items() -> None:
    first, looped = json.dumps(triplet("fever")), json.dumps(triplet("pain"))
    text = "[" + first + ", " + ", ".join([looped] * 25) + ', {"subject": "asp'
    cut, removed = cut_repetition(text)
    assert removed > 0 and cut.endswith("},")
    value, error = parse_json_lenient(cut, TRIPLET_SCHEMA)
    assert error is None and value == [triplet("fever"), triplet("pain")]


def test_json_string_list_loop() -> None:
    text = '{"claims": ["A is B.", ' + '"C causes D in mice.", ' * 12 + '"C cau'
    cut, _ = cut_repetition(text)
    value, error = parse_json_lenient(cut, {"type": "object", "required": ["claims"]})
    assert error is None and value == {"claims": ["A is B.", "C causes D in mice."]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"a": 1}, {"b": 2}, {"c"', [{"a": 1}, {"b": 2}]),
        ('[{"a": 1}, {"b": 2}, {"c": "hea', [{"a": 1}, {"b": 2}]),
        ('[{"a": 1}, {"b": 2}', [{"a": 1}, {"b": 2}]),
        ('{"claims": ["x", "y", "z', {"claims": ["x", "y"]}),
        ('```json\n[{"s": "a"}, {"s": "c", "o', [{"s": "a"}]),
        ('[{"a": "x, y]"}, {"b": "q\\" , ]"}, {"c', [{"a": "x, y]"}, {"b": 'q" , ]'}]),
        ('{"s": [{"a": 1}, {"b": {"c": [2]}}, {"d": [1,', {"s": [{"a": 1}, {"b": {"c": [2]}}]}),
    ],
)
def test_truncated_list_keeps_complete_items(text: str, expected: object) -> None:
    assert parse_json_lenient(text) == (expected, None)


def test_complete_items_leaves_whole_json_alone() -> None:
    assert complete_items('[1, 2] and then {"x"') is None
    assert complete_items('{"answer": "B", "reasoning": "cut') is None
    assert complete_items('[{"subject": "aspirin", "obj') is None


def test_truncated_kg_batch_reply_without_schema() -> None:
    from biorag.kg.extract_triplets import _batch_items

    reply = (
        '[{"id": 1, "subject": "aspirin", "predicate": "treats", "object": "pain"}, '
        '{"id": 2, "subject": "insulin", "predicate": "lowers", "object": "glucose"}, '
        '{"id": 3, "subject": "statins", "predicate": "lower", "obj'
    )
    assert _batch_items(reply, 3) == {
        0: ("aspirin", "treats", "pain"),
        1: ("insulin", "lowers", "glucose"),
    }


async def test_attach_parsed_cuts_records_and_counts() -> None:
    first, looped = json.dumps(triplet("fever")), json.dumps(triplet("pain"))
    answer = "[" + first + ", " + ", ".join([looped] * 25) + ', {"subj'
    llm = LLM(
        MockBackend(rules=[{"stage": "strata_triplets", "response": answer}, {"response": "Y"}]),
        max_retries=0,
        retry_base_delay=0.0,
    )
    req = ChatRequest(
        messages=[{"role": "user", "content": "x"}],
        stage="strata_triplets",
        json_schema=TRIPLET_SCHEMA,
    )
    resp = await llm.chat(req)
    assert resp.parsed == [triplet("fever"), triplet("pain")]
    assert resp.repetition_cut == len(answer) - len(resp.text) > 0
    plain = await llm.chat(ChatRequest(messages=[{"role": "user", "content": "y"}]))
    assert plain.repetition_cut is None and plain.text == "Y"
    report = llm.accounting.report()["stages"]
    assert report["strata_triplets"]["repetition_cuts"] == 1
    assert report["default"]["repetition_cuts"] == 0
    assert "loops" in llm.accounting.format_report()


def test_a_loop_inside_one_word_drops_the_word() -> None:
    # what SmolLM2-135M wrote on the CI machine under a JSON schema: one word, no token repeats
    head = '{\n  "claims": [\n    "json",\n    "'
    word = "jimmy" + "jim" * 14 + "j" * 300
    loop = find_loop(head + word)
    assert loop is not None and loop.rule == "word" and loop.unit == "j"
    cut, _ = cut_repetition(head + word)
    assert cut == head.rstrip()
    assert parse_json_lenient(cut)[0] == {"claims": ["json"]}
    # the loop is found as soon as the run is long enough, and cut at the same place
    early = head + "jimmy" + "jim" * 22
    assert find_loop(early) is not None and cut_repetition(early)[0] == cut
    assert cut_repetition(head + word + '"')[0] == cut  # a closing quote after it


@pytest.mark.parametrize(
    "text",
    [
        "The (CAG)n repeat: CAGCAGCAGCAGCAGCAGCAGCAG in exon 1.",  # 24 characters, not a loop
        "Sequence: " + "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQVKVKALPDAQ",
        "aaaa" * 20 + " is followed by other words",
    ],
)
def test_long_words_that_do_not_loop(text: str) -> None:
    assert find_loop(text) is None
