from __future__ import annotations

from biorag.eval.judge_score import five_point_score, parse_score, score_answers
from biorag.llm import LLM, MockBackend


def _llm(rules):
    return LLM(MockBackend(rules=rules), max_retries=0, retry_base_delay=0.0)


async def test_five_point_score_parses():
    llm = _llm([{"stage": "judge_score", "response": {"score": 4, "reason": "minor gap"}}])
    got = await five_point_score(llm, "Q?", "ideal", "answer")
    assert got.score == 4 and got.reason == "minor gap" and '"score": 4' in got.raw
    assert llm.backend.calls[0].stage == "judge_score"


async def test_out_of_range_and_garbage_are_none():
    assert (await five_point_score(_llm([{"response": {"score": 7}}]), "q", "i", "a")).score is None
    assert (await five_point_score(_llm([{"response": "no idea"}]), "q", "i", "a")).score is None
    assert parse_score({"score": "3"}) == (3, "")
    assert parse_score({"score": 2.5})[0] is None and parse_score({"score": True})[0] is None
    assert parse_score({"score": 0})[0] is None


async def test_mean_ignores_unscored():
    llm = _llm(
        [
            {"match": "ANS-A", "response": {"score": 5}},
            {"match": "ANS-B", "response": {"score": 2}},
            {"match": "ANS-C", "response": {"score": 9}},
            {"match": "ANS-D", "error": "fatal"},
        ]
    )
    items = [
        {"question": "q1", "ideal_answer": "i", "answer": "ANS-A"},
        ("q2", "i", "ANS-B"),
        {"question": "q3", "ideal_answer": "i", "answer": "ANS-C"},
        {"question": "q4", "ideal_answer": "i", "answer": "ANS-D"},
    ]
    got = await score_answers(llm, items)
    assert got["mean"] == 3.5 and got["n"] == 2 and got["unscored"] == 2
    assert got["scores"] == [5, 2, None, None]
    assert (await score_answers(llm, []))["mean"] is None
