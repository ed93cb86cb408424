"""The evaluation runner offline: mock LLM, a tiny dataset, resume after a kill, errors."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from biorag.config import Settings
from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.run.records import read_predictions
from biorag.eval.run.runner import run_eval
from biorag.llm.mock_backend import MockBackend
from biorag.methods.base import Answer, QAMethod
from biorag.runtime import Runtime

REPO = Path(__file__).resolve().parents[2]
LETTERS = "ABCD"


def make_items(n: int, with_context: bool = False) -> list[dict]:
    """Questions that tell the scripted model what to answer ("pick X"), gold cycling A-D.

    Every 5th question asks for "?" (an unparseable answer); the model answers right on
    every 3rd question only, so accuracy is neither 0 nor 1.
    """
    out = []
    for i in range(n):
        gold = LETTERS[i % 4]
        pick = "?" if i % 5 == 4 else (gold if i % 3 == 0 else LETTERS[(i + 1) % 4])
        out.append(
            {
                "id": f"q{i}",
                "dataset": "toy",
                "question": f"Question {i}: which one? pick {pick}",
                "options": {k: f"option {k.lower()} {i}" for k in LETTERS},
                "gold": gold,
                "subset": "s1" if i % 2 else "s2",
                "context": [f"Passage for question {i} about option {gold.lower()}."]
                if with_context
                else [],
            }
        )
    return out


def write_dataset(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in items), encoding="utf-8")
    return path


def jsonl_loader(name, path, *, split=None, setting=None, limit=None):
    items = [
        QAItem.model_validate_json(line)
        for line in Path(path).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return SimpleNamespace(items=items[:limit] if limit else items, skipped=[], info={"n": 0})


def responder(req) -> str:
    import re

    prompt = req.last_user_message()
    if req.stage == "answer_extract":
        m = re.search(r"pick ([A-D?])", prompt)
        letter = m.group(1) if m else "?"
        return json.dumps({"answer": letter}) if letter != "?" else "no idea"
    m = re.search(r"pick ([A-D?])", prompt)
    return f"Reasoning: the answer is {m.group(1) if m else '?'}."


def settings(tmp_path: Path) -> Settings:
    return Settings.model_validate(
        {
            "home": str(tmp_path / "home"),
            "llm": {"backend": "mock", "mock_script": "dry-run", "cache": False},
        }
    )


def run(tmp_path, data, out, **kw):
    kw.setdefault("methods", ["closed-book"])
    kw.setdefault("backend", MockBackend(responder=responder))
    kw.setdefault("loader", jsonl_loader)
    return run_eval(settings(tmp_path), "toy", data, out_dir=out, **kw)


def stable(metrics: dict) -> dict:
    """metrics.json without the wall-clock fields."""
    m = json.loads(json.dumps(metrics))
    m["accounting"].pop("wall_s")
    for e in m["methods"].values():
        e.pop("seconds_total")
        e.pop("seconds_per_question")
    return m


@pytest.fixture
def data(tmp_path) -> Path:
    return write_dataset(tmp_path / "toy.jsonl", make_items(12))


def test_whole_run_records_metrics_and_per_question_accounting(tmp_path, data):
    out = tmp_path / "run"
    s = run(tmp_path, data, out, concurrency=4)
    recs = read_predictions(out / "predictions.jsonl")
    assert len(recs) == 12 and s.answered_now == 12 and s.already_done == 0
    by_id = {r["question_id"]: r for r in recs}
    r0 = by_id["q0"]
    assert r0["prediction"] == "A" and r0["gold"] == "A" and r0["correct"] is True
    assert r0["options"]["A"] == "option a 0" and r0["error"] is None
    assert by_id["q4"]["parse_failed"] is True and by_id["q4"]["correct"] is False
    # each question's own accounting, even though four were answered at once
    for r in recs:
        stages = r["accounting"]["stages"]
        assert stages["answer"]["calls"] == 1 and stages["answer_extract"]["calls"] == 1
        assert r["accounting"]["total"]["calls"] == 2
    m = json.loads((out / "metrics.json").read_text())
    cb = m["methods"]["closed-book"]
    correct = sum(1 for r in recs if r["correct"])
    assert cb["accuracy"] == pytest.approx(correct / 12)
    assert cb["n"] == 12 and cb["errors"] == 0 and cb["missing"] == 0
    assert cb["unparseable"] == sum(1 for r in recs if r["parse_failed"]) == 2
    assert cb["answered"] == 10
    assert set(cb["by_subset"]) == {"s1", "s2"}
    assert cb["accounting_per_question"]["total"]["calls"] == 2.0
    assert cb["accounting_per_question"]["stages"]["answer"]["calls"] == 1.0
    # multiple choice only: nothing for the five-point judge, and no judgments file
    assert cb["judged"] == {
        "note": "not judged: no question in this run has an ideal answer",
        "eligible": 0,
    }
    assert not (out / "judgments.jsonl").exists()
    cfg = json.loads((out / "run.json").read_text())
    assert cfg["methods"] == ["closed-book"] and cfg["models"]["llm_backend"] == "mock"
    assert cfg["models"]["llm_model"] == "mock-callable" and cfg["biorag_version"]
    # a second call has nothing left to do and gives the same metrics
    s2 = run(tmp_path, data, out)
    assert s2.answered_now == 0 and s2.already_done == 12
    assert stable(s2.metrics) == stable(m)


def test_given_context_and_dry_run_model(tmp_path):
    """retrieve-read reads each question's own passages (no index); the dry-run model."""
    data = write_dataset(tmp_path / "ctx.jsonl", make_items(4, with_context=True))
    out = tmp_path / "run"
    s = run_eval(
        settings(tmp_path),
        "toy",
        data,
        methods=["closed-book", "retrieve-read"],
        out_dir=out,
        loader=jsonl_loader,
    )
    recs = read_predictions(out / "predictions.jsonl")
    assert len(recs) == 8
    rr = [r for r in recs if r["method"] == "retrieve-read"]
    assert all(r["evidence"] == [f"given:{r['question_id']}:0"] for r in rr)
    assert all("Passage for question" in r["context"] for r in rr)
    assert all(r["documents"] == [] for r in rr)  # given passages are not retrieved docs
    assert all(r["prediction"] == "A" for r in recs)  # dry-run answers A
    assert set(s.metrics["methods"]) == {"closed-book", "retrieve-read"}


def test_method_needing_an_index_without_one_is_an_error(tmp_path, data):
    with pytest.raises(BioragError, match="give an index directory"):
        run(tmp_path, data, tmp_path / "run", methods=["retrieve-read"])
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


class Boom(QAMethod):
    name = "boom"

    async def answer(self, question):
        if question.id in ("q1", "q2"):
            raise RuntimeError(f"cannot answer {question.id}")
        return Answer(method=self.name, question_id=question.id, answer="A")


def test_a_method_that_raises_is_recorded_and_counted(tmp_path, data, monkeypatch):
    from biorag.methods import registry

    monkeypatch.setitem(registry.METHODS, "boom", Boom)
    out = tmp_path / "run"
    s = run(tmp_path, data, out, methods=["boom", "closed-book"])
    assert s.errors_now == 2
    recs = read_predictions(out / "predictions.jsonl")
    assert len(recs) == 24
    errs = [r for r in recs if r["error"]]
    assert {r["question_id"] for r in errs} == {"q1", "q2"}
    assert errs[0]["error"].startswith("RuntimeError: cannot answer")
    assert all(r["correct"] is False for r in errs)
    boom = s.metrics["methods"]["boom"]
    assert boom["errors"] == 2 and boom["answered"] == 10 and boom["n"] == 12
    # q0, q4, q8 have gold A: failures stay in the denominator
    assert boom["accuracy"] == pytest.approx(3 / 12)
    # on resume the failed pairs are answered again (still failing: two new records)
    s2 = run(tmp_path, data, out, methods=["boom", "closed-book"])
    assert s2.answered_now == 2 and s2.errors_now == 2
    s3 = run(tmp_path, data, out, methods=["boom", "closed-book"], retry_errors=False)
    assert s3.answered_now == 0
    assert stable(s3.metrics) == stable(s.metrics)


def test_many_failures_in_a_row_stop_the_run(tmp_path, data, monkeypatch):
    from biorag.methods import registry

    class Down(QAMethod):
        name = "down"

        async def answer(self, question):
            raise ConnectionError("server down")

    monkeypatch.setitem(registry.METHODS, "down", Down)
    out = tmp_path / "run"
    with pytest.raises(BioragError, match="failed answers in a row"):
        run(tmp_path, data, out, methods=["down"], concurrency=1, max_consecutive_errors=3)
    assert len(read_predictions(out / "predictions.jsonl")) == 3


def test_resume_with_another_config_names_the_difference(tmp_path, data, monkeypatch):
    from biorag.methods import registry

    monkeypatch.setitem(registry.METHODS, "boom", Boom)
    monkeypatch.setitem(registry.METHODS, "tunable", Tunable)
    out = tmp_path / "run"
    run(tmp_path, data, out, limit=3)
    tuned = tmp_path / "tuned"
    run(tmp_path, data, tuned, limit=3, methods=["tunable"])
    with pytest.raises(BioragError, match=r"method_options\.tunable.*new run directory"):
        run(tmp_path, data, tuned, limit=3, methods=["tunable"],
            method_options={"tunable": {"depth": 2}})  # fmt: skip
    with pytest.raises(BioragError, match=r"split: None in run\.json, now 'test'"):
        run(tmp_path, data, out, split="test")
    with pytest.raises(BioragError, match=r"methods: \['closed-book'\] in run.json, now"):
        run(tmp_path, data, out, methods=["closed-book", "boom"])
    # a larger --limit extends the same run
    s = run(tmp_path, data, out, limit=5)
    assert s.already_done == 3 and s.answered_now == 2


class Tunable(QAMethod):
    """A method whose default option a new version could change."""

    name = "tunable"
    DEFAULTS: ClassVar[dict[str, int]] = {"depth": 5}

    def __init__(self, runtime, **options):
        super().__init__(runtime, **{**Tunable.DEFAULTS, **options})

    async def answer(self, question):
        return Answer(method=self.name, question_id=question.id, answer="A")


def test_a_changed_method_default_is_refused_on_resume(tmp_path, data, monkeypatch):

    from biorag.methods import registry

    monkeypatch.setitem(registry.METHODS, "tunable", Tunable)
    out = tmp_path / "run"
    run(tmp_path, data, out, methods=["tunable"], limit=2)
    recorded = json.loads((out / "run.json").read_text())
    assert recorded["effective_options"] == {"tunable": {"depth": 5}}
    monkeypatch.setitem(Tunable.DEFAULTS, "depth", 7)  # as a new biorag version might
    with pytest.raises(BioragError, match=r"effective_options\.tunable: \{'depth': 5\}"):
        run(tmp_path, data, out, methods=["tunable"], limit=3)
    # a run.json from before effective options were recorded still resumes
    del recorded["effective_options"]
    (out / "run.json").write_text(json.dumps(recorded))
    assert run(tmp_path, data, out, methods=["tunable"], limit=3).answered_now == 1


def test_bad_arguments_are_clear_errors(tmp_path, data):
    out = tmp_path / "run"
    with pytest.raises(BioragError, match="unknown method 'nope'"):
        run(tmp_path, data, out, methods=["nope"])
    with pytest.raises(BioragError, match="not among the methods"):
        run(tmp_path, data, out, method_options={"claims": {}})
    with pytest.raises(BioragError, match="twice"):
        run(tmp_path, data, out, methods=["closed-book", "closed-book"])


def test_truncated_last_line_is_dropped_and_answered_again(tmp_path, data, caplog):
    clean = tmp_path / "clean"
    ref = run(tmp_path, data, clean)
    out = tmp_path / "cut"
    run(tmp_path, data, out)
    path = out / "predictions.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # the process died while writing the 11th line: 10 whole lines and half of one
    path.write_bytes(b"".join(lines[:10]) + lines[10][: len(lines[10]) // 2])
    with caplog.at_level(logging.WARNING, logger="biorag.eval"):
        s = run(tmp_path, data, out)
    assert "truncated last line" in caplog.text
    assert s.already_done == 10 and s.answered_now == 2
    recs = read_predictions(path)
    assert len(recs) == 12 and path.read_bytes().endswith(b"\n")
    assert stable(s.metrics) == stable(ref.metrics)


def test_a_corrupt_line_in_the_middle_is_an_error(tmp_path, data):
    out = tmp_path / "run"
    run(tmp_path, data, out, limit=3)
    path = out / "predictions.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "{not json\n" + "".join(lines[1:]))
    with pytest.raises(BioragError, match="line 2 is not a prediction record"):
        run(tmp_path, data, out, limit=3)


SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from types import SimpleNamespace
sys.path.insert(0, {tests!r})
from test_runner import jsonl_loader, responder, settings
from biorag.eval.run.runner import run_eval
from biorag.llm.mock_backend import MockBackend

class Slow(MockBackend):
    async def chat(self, req):
        await asyncio.sleep({delay})
        return await super().chat(req)

tmp, data, out = map(Path, sys.argv[1:4])
run_eval(settings(tmp), "toy", data, out_dir=out, methods=["closed-book", "boom"],
         backend=Slow(responder=responder), loader=jsonl_loader, concurrency=3)
"""


def test_killed_run_resumes_to_the_same_metrics(tmp_path, monkeypatch):
    from biorag.methods import registry

    monkeypatch.setitem(registry.METHODS, "boom", Boom)
    data = write_dataset(tmp_path / "toy.jsonl", make_items(30))
    total = 60
    clean = run(tmp_path, data, tmp_path / "clean", methods=["closed-book", "boom"])

    out = tmp_path / "killed"
    script = tmp_path / "child.py"
    # the child registers the raising method too
    script.write_text(
        SCRIPT.format(tests=str(Path(__file__).parent), delay=0.05).replace(
            "from biorag.eval.run.runner",
            "from biorag.methods import registry\n"
            "from test_runner import Boom\n"
            "registry.METHODS['boom'] = Boom\n"
            "from biorag.eval.run.runner",
        )
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), str(data), str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    path = out / "predictions.jsonl"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if path.exists() and path.read_bytes().count(b"\n") >= 8:
                break
            if proc.poll() is not None:
                pytest.fail(f"child ended early: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    done = len(read_predictions(path))
    assert 8 <= done < total, done
    assert not (out / "metrics.json").exists()

    s = run(tmp_path, data, out, methods=["closed-book", "boom"])
    assert s.already_done + s.answered_now == total
    assert s.already_done >= 8 - 2  # errored pairs are answered again
    assert stable(s.metrics) == stable(clean.metrics)
    # every pair's latest record is there exactly as a clean run wrote it
    latest = {(r["method"], r["question_id"]): r for r in read_predictions(path)}
    ref = {
        (r["method"], r["question_id"]): r
        for r in read_predictions(tmp_path / "clean" / "predictions.jsonl")
    }
    assert set(latest) == set(ref)
    for k, r in ref.items():
        assert {**latest[k], "seconds": 0} == {**r, "seconds": 0}


def test_shared_runtime_is_used(tmp_path, data, hash_embedder):
    """A caller's runtime (e.g. with an injected embedder) serves every question."""
    rt = Runtime(
        Settings.model_validate({"home": str(tmp_path / "home")}),  # no LLM: the floor
        embedder=hash_embedder,
    )
    out = tmp_path / "run"
    s = run_eval(
        rt.settings,
        "toy",
        data,
        methods=["closed-book"],
        out_dir=out,
        loader=jsonl_loader,
        runtime=rt,
        limit=4,
    )
    assert hash_embedder.calls  # the floor compared options with the shared embedder
    recs = read_predictions(out / "predictions.jsonl")
    assert all(r["accounting"]["stages"] == {} for r in recs)
    assert all(r["prediction"] in LETTERS for r in recs)
    assert s.metrics["methods"]["closed-book"]["accounting_per_question"]["total"]["calls"] == 0


def test_retrieval_from_an_index_with_a_shared_searcher(tmp_path, corpus_file, hash_embedder):
    """Questions answered concurrently search one shared index; documents are source ids."""
    from biorag.corpus.loaders import load_corpus
    from biorag.retrieve.index import IndexDir

    idx = IndexDir(tmp_path / "idx", hash_embedder, name="toycorpus")
    idx.add(load_corpus(corpus_file))
    idx.close()
    data = write_dataset(tmp_path / "toy.jsonl", make_items(8))
    rt = Runtime(settings(tmp_path), [tmp_path / "idx"], embedder=hash_embedder)
    out = tmp_path / "run"
    s = run_eval(
        rt.settings,
        "toy",
        data,
        methods=["retrieve-read"],
        index_paths=[tmp_path / "idx"],
        out_dir=out,
        loader=jsonl_loader,
        runtime=rt,
        backend=MockBackend(responder=responder),
        concurrency=4,
    )
    recs = read_predictions(out / "predictions.jsonl")
    assert len(recs) == 8 and not any(r["error"] for r in recs)
    assert all(
        r["evidence"] and set(r["documents"]) <= {"1001", "1002", "1003", "1004"} for r in recs
    )
    cfg = json.loads((out / "run.json").read_text())
    assert cfg["indexes"] == [{"name": "toycorpus", "embed_model": "test:hash-64", "dim": 64}]
    assert s.metrics["methods"]["retrieve-read"]["n"] == 8
    rt.close()


def test_run_json_masks_credentials_and_resumes_with_tuples(tmp_path, data, monkeypatch):
    from biorag.methods import registry

    class Weighted(Tunable):  # a method taking the options IP-RAR takes
        DEFAULTS: ClassVar[dict[str, Any]] = {"weights": (5, 3, 1), "reasoning_model": None}

    monkeypatch.setitem(registry.METHODS, "tunable", Weighted)
    out = tmp_path / "run"
    opts = {
        "tunable": {
            "weights": (5, 3, 1),
            "reasoning_model": {"base_url": "https://user:s3cret@r1.example/v1", "model": "r1"},
        }
    }
    run(tmp_path, data, out, methods=["tunable"], method_options=opts, limit=2)
    text = (out / "run.json").read_text()
    assert "s3cret" not in text and "https://***@r1.example/v1" in text
    # the same options again (a tuple is a list in run.json): the run resumes
    s = run(tmp_path, data, out, methods=["tunable"], method_options=opts, limit=3)
    assert s.answered_now == 1


def test_a_setting_added_later_at_its_default_does_not_block_a_resume():
    from biorag.config import RetrievalSettings
    from biorag.eval.run.config import config_differences

    now = RetrievalSettings().model_dump()
    recorded = {k: v for k, v in now.items() if k != "corpus_retrievers"}  # an older run.json
    old = {"models": {"retrieval": recorded, "embed_model": "m"}}
    assert config_differences(old, {"models": {"retrieval": now, "embed_model": "m"}}) == []
    changed = {**now, "corpus_retrievers": {"pubmed": "dense"}}  # not the default: refused
    diffs = config_differences(old, {"models": {"retrieval": changed, "embed_model": "m"}})
    assert len(diffs) == 1 and diffs[0].startswith("models.retrieval:")
    moved = {**now, "k": 3}  # a recorded setting that changed is still refused
    assert config_differences(old, {"models": {"retrieval": moved, "embed_model": "m"}})


def test_method_option_paths_are_made_absolute_for_workers(tmp_path, monkeypatch):
    from biorag.eval.run.on_executor import absolute_paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "kg").mkdir()
    got = absolute_paths({"vectorgraphrag": {"kg": "kg", "top_k": 5, "mode": "faithful"}})
    assert got == {"vectorgraphrag": {"kg": str(tmp_path / "kg"), "top_k": 5, "mode": "faithful"}}
