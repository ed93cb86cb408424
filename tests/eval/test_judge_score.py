from __future__ import annotations

from biorag.eval.judging.five_point import five_point_score, parse_score
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
