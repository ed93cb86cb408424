"""The runner with a failing LLM: failed questions are recorded with their reason while the run
goes on, answers made before a stop are kept, and metrics.json carries the LLM accounting."""

from __future__ import annotations

import json
import re

import pytest
from tests.eval.test_runner import jsonl_loader, make_items, responder, write_dataset

from biorag.config import Settings
from biorag.errors import BioragError, LLMError
from biorag.eval.run.records import read_predictions
from biorag.eval.run.runner import run_eval
from biorag.llm.mock_backend import MockBackend


def _settings(tmp_path, cache: bool = False) -> Settings:
    return Settings.model_validate(
        {"home": str(tmp_path / "home"), "llm": {"backend": "mock", "cache": cache}}
    )


def _run(tmp_path, data, out, backend, **kw):
    kw.setdefault("methods", ["closed-book"])
    settings = kw.pop("settings", None) or _settings(tmp_path)
    return run_eval(settings, "toy", data, out_dir=out, backend=backend, loader=jsonl_loader, **kw)


def _question(req) -> int:
    m = re.search(r"Question (\d+):", req.last_user_message())
    return int(m.group(1)) if m else -1


@pytest.fixture
def data(tmp_path):
    return write_dataset(tmp_path / "toy.jsonl", make_items(12))


def test_llm_errors_are_recorded_with_their_reason_and_the_run_goes_on(tmp_path, data):
    def flaky(req):
        if _question(req) in (3, 7):
            raise LLMError("openai model 'nope' has no model 'nope': fix llm.model")
        return responder(req)

    out = tmp_path / "run"
    s = _run(tmp_path, data, out, MockBackend(responder=flaky), concurrency=3)
    assert s.answered_now == 12 and s.errors_now == 2
    recs = {r["question_id"]: r for r in read_predictions(out / "predictions.jsonl")}
    for q in ("q3", "q7"):
        assert recs[q]["error"].startswith("LLMError: ") and "llm.model" in recs[q]["error"]
        assert recs[q]["prediction"] == "" and recs[q]["correct"] is False
        assert recs[q]["accounting"]["total"]["failures"] == 1
    assert all(r["error"] is None for q, r in recs.items() if q not in ("q3", "q7"))
    cb = s.metrics["methods"]["closed-book"]
    assert cb["errors"] == 2 and cb["n"] == 12 and cb["missing"] == 0
    assert cb["accounting_total"]["total"]["failures"] == 2


def test_answers_made_before_the_server_went_down_are_kept(tmp_path, data):
    calls = {"n": 0}

    def dies_after_five_questions(req):
        calls["n"] += 1
        if calls["n"] > 10:  # two calls per question
            raise LLMError("cannot connect to llm.base_url http://127.0.0.1:9/v1: start it")
        return responder(req)

    out = tmp_path / "run"
    with pytest.raises(BioragError, match=r"3 failed answers in a row.*llm\.base_url"):
        _run(
            tmp_path,
            data,
            out,
            MockBackend(responder=dies_after_five_questions),
            concurrency=1,
            max_consecutive_errors=3,
        )
    before = read_predictions(out / "predictions.jsonl")
    assert [r["error"] is None for r in before] == [True] * 5 + [False] * 3
    s = _run(tmp_path, data, out, MockBackend(responder=responder))
    assert s.already_done == 5 and s.answered_now == 7 and s.errors_now == 0
    after = read_predictions(out / "predictions.jsonl")
    assert after[:5] == before[:5]  # kept as they were written
    assert s.metrics["methods"]["closed-book"]["errors"] == 0


class Timed(MockBackend):
    """The scripted answers, each taking 0.25 s of (reported) backend latency; cacheable."""

    async def chat(self, req):
        resp = await super().chat(req)
        return resp.model_copy(update={"latency_s": 0.25})


def test_metrics_accounting_latency_cache_hits_and_wall_time(tmp_path, data):
    settings = _settings(tmp_path, cache=True)
    backend = Timed(responder=responder)
    backend.cacheable = True
    first = _run(tmp_path, data, tmp_path / "a", backend, settings=settings)
    m = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert m == json.loads(json.dumps(first.metrics))
    cb = m["methods"]["closed-book"]
    per_q, total = cb["accounting_per_question"], cb["accounting_total"]
    for stage in ("answer", "answer_extract"):
        assert per_q["stages"][stage]["calls"] == 1.0
        assert per_q["stages"][stage]["latency_s"] == pytest.approx(0.25)
        assert per_q["stages"][stage]["cache_hits"] == 0.0
        assert total["stages"][stage]["calls"] == 12
        assert total["stages"][stage]["latency_s"] == pytest.approx(3.0)
        assert total["stages"][stage]["prompt_tokens"] > 0
    assert total["total"]["calls"] == 24 and total["total"]["latency_s"] == pytest.approx(6.0)
    assert m["accounting"]["total"] == total["total"] and m["accounting"]["wall_s"] > 0
    # the same questions again (another run directory): every call is a cache hit but the two
    # unparseable answers (q4, q9), which are never cached
    second = _run(tmp_path, data, tmp_path / "b", backend, settings=settings)
    again = second.metrics["methods"]["closed-book"]["accounting_total"]
    assert again["total"]["calls"] == 24 and again["total"]["cache_hits"] == 22
    assert again["stages"]["answer"]["cache_hits"] == 12
    assert again["stages"]["answer"]["prompt_tokens"] == 0
    assert again["stages"]["answer"]["latency_s"] == 0
    assert again["total"]["latency_s"] == pytest.approx(0.5)
    assert second.metrics["accounting"]["wall_s"] > 0
