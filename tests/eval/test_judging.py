"""The five-point judged answer score through the runner: judging, resume, re-judging, notes."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from biorag.config import Settings, load_settings
from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.judging.judge_run import judge_answers, open_judge, rejudge_run
from biorag.eval.run.records import answer_sha256, judged_text, read_judgments, read_predictions
from biorag.eval.run.runner import run_eval
from biorag.eval.run.scoring import ideal_answer, source_commit
from biorag.llm.mock_backend import MockBackend
from biorag.llm.shared import SharedLLM
from biorag.methods.base import Answer, QAMethod

# What the "echo" method answers per question (a test edits it to change an answer).
ANSWERS: dict[str, str] = {}


class Echo(QAMethod):
    """Answers ANSWERS[question id] without any LLM; fails on a question marked FAIL."""

    name = "echo"

    async def answer(self, question):
        text = ANSWERS[question.id]
        if text == "FAIL":
            raise RuntimeError("cannot answer")
        return Answer(method=self.name, question_id=question.id, answer=text, answer_text=text)


ITEMS = [
    # BioCDQA: a summary question, gold = the ideal answer
    {"id": "c1", "dataset": "biocdqa", "question": "What does drug X do?",
     "gold": "Drug X lowers glucose.", "question_type": "summary"},
    {"id": "c2", "dataset": "biocdqa", "question": "How is Y treated?",
     "gold": "Y is treated with Z.", "question_type": "summary"},
    # BioASQ yes/no: the ideal answer in meta (the first one is used)
    {"id": "b1", "dataset": "bioasq", "question": "Is A a kinase?", "options": {"A": "yes",
     "B": "no"}, "gold": "A", "question_type": "yesno",
     "meta": {"ideal_answer": ["Yes, A is a kinase.", "A kinase."]}},
    # multiple choice without an ideal answer: never judged
    {"id": "m1", "dataset": "toy", "question": "Pick one", "options": {"A": "a", "B": "b"},
     "gold": "A"},
]  # fmt: skip


def loader(name, path, *, split=None, setting=None, limit=None):
    items = [QAItem.model_validate(d) for d in json.loads(Path(path).read_text())]
    return SimpleNamespace(items=items[:limit] if limit else items, skipped=[], info={})


def judge_backend(scores: dict[str, int | str], model: str = "judge-1") -> MockBackend:
    """A judge scoring answer ``ANS-k`` with ``scores[ANS-k]`` (``"fail"``: a failed call)."""
    rules = []
    for ans, s in scores.items():
        rule: dict = {"match": f"Answer to grade: {ans}\\b", "stage": "judge_score"}
        if s == "fail":
            rule["error"] = "fatal"
        else:
            rule["response"] = {"score": s, "reason": f"scored {s}"}
        rules.append(rule)
    return MockBackend(rules=rules, model=model)


def make_settings(tmp_path: Path, **judge) -> Settings:
    return Settings.model_validate(
        {"home": str(tmp_path / "home"), "llm": {"backend": "none"}, "judge": judge}
    )


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    from biorag.methods import registry

    monkeypatch.setitem(registry.METHODS, "echo", Echo)
    ANSWERS.clear()
    ANSWERS.update({"c1": "ANS-1", "c2": "ANS-2", "b1": "ANS-3", "m1": "A"})
    path = tmp_path / "items.json"
    path.write_text(json.dumps(ITEMS))
    return path


def run(tmp_path, data, out, settings=None, **kw):
    return run_eval(
        settings or make_settings(tmp_path),
        "toy",
        data,
        methods=["echo"],
        out_dir=out,
        loader=loader,
        **kw,
    )


def judged(summary) -> dict:
    return summary.metrics["methods"]["echo"]["judged"]


def test_ideal_answers_and_judged_text():
    items = [QAItem.model_validate(d) for d in ITEMS]
    assert [ideal_answer(it) for it in items] == [
        "Drug X lowers glucose.",
        "Y is treated with Z.",
        "Yes, A is a kinase.",
        None,
    ]
    free = QAItem(id="f", dataset="d", question="q", gold=" an answer ", question_type="free")
    factoid = QAItem(id="f", dataset="d", question="q", gold=[["x"]], question_type="factoid")
    assert ideal_answer(free) == "an answer" and ideal_answer(factoid) is None
    assert judged_text({"answer_text": "long", "prediction": "A"}) == "long"
    assert judged_text({"answer_text": "", "prediction": "yes"}) == "yes"
    assert judged_text({"answer_text": "", "prediction": ["x", "y"]}) == ""


def test_judging_scores_each_answer_then_resume_makes_no_judge_calls(tmp_path, data):
    out = tmp_path / "run"
    judge = judge_backend({"ANS-1": 5, "ANS-2": 2, "ANS-3": 4})
    s = run(tmp_path, data, out, judge_backend=judge)
    assert len(judge.calls) == 3 and all(c.stage == "judge_score" for c in judge.calls)
    prompts = [c.last_user_message() for c in judge.calls]
    assert any("Ideal answer: Drug X lowers glucose." in p and "ANS-1" in p for p in prompts)
    assert any("Ideal answer: Yes, A is a kinase." in p and "ANS-3" in p for p in prompts)
    b = judged(s)
    assert b["judge_model"] == "mock:judge-1" and b["n"] == 3 and b["eligible"] == 3
    assert b["mean"] == pytest.approx(11 / 3, abs=1e-4) and b["unscored"] == 0
    assert b["distribution"] == {"1": 0, "2": 1, "3": 0, "4": 1, "5": 1}
    assert b["accounting"]["calls"] == 3 and b["no_answer"] == 0
    assert s.judged_now == 3 and s.judge_failed_now == 0
    rows = read_judgments(out / "judgments.jsonl")
    assert {(r["question_id"], r["score"]) for r in rows} == {("c1", 5), ("c2", 2), ("b1", 4)}
    assert all(r["answer_sha256"] == answer_sha256(ANSWERS[r["question_id"]]) for r in rows)
    # resumed: nothing new to answer or judge; the same block
    again = judge_backend({"ANS-1": 1, "ANS-2": 1, "ANS-3": 1})
    s2 = run(tmp_path, data, out, judge_backend=again)
    assert again.calls == [] and s2.judged_now == 0 and s2.already_judged == 3
    assert judged(s2) == b
    # the judged score is in report.md
    from biorag.eval.report.writer import metrics_table, write_report

    text = write_report(out).read_text()
    assert "## Judged answer score (1-5)" in text and "| mock:judge-1 | 3.67 | 3 | 0 |" in text
    assert "3.67 (n=3)" in metrics_table(s2.metrics)


def test_a_changed_answer_is_judged_again(tmp_path, data):
    out = tmp_path / "run"
    run(tmp_path, data, out, judge_backend=judge_backend({"ANS-1": 5, "ANS-2": 2, "ANS-3": 4}))
    # the latest record of (echo, c2) now carries another answer (as a re-answer would)
    path = out / "predictions.jsonl"
    rec = next(r for r in read_predictions(path) if r["question_id"] == "c2")
    with path.open("a") as fh:
        fh.write(json.dumps({**rec, "answer_text": "ANS-9", "prediction": "ANS-9"}) + "\n")
    judge = judge_backend({"ANS-1": 1, "ANS-2": 1, "ANS-3": 1, "ANS-9": 3})
    s = run(tmp_path, data, out, judge_backend=judge)
    assert len(judge.calls) == 1 and "ANS-9" in judge.calls[0].last_user_message()
    assert judged(s)["distribution"] == {"1": 0, "2": 0, "3": 1, "4": 1, "5": 1}
    assert len(read_judgments(out / "judgments.jsonl")) == 4  # the old judgment stays


def test_an_edited_judge_prompt_judges_everything_again(tmp_path, data, monkeypatch):
    from biorag.eval.judging import five_point

    out = tmp_path / "run"
    run(tmp_path, data, out, judge_backend=judge_backend({"ANS-1": 5, "ANS-2": 2, "ANS-3": 4}))
    first = read_judgments(out / "judgments.jsonl")
    assert {r["judge_prompt"] for r in first} == {five_point.prompt_version()}
    monkeypatch.setattr(five_point, "prompt_version", lambda: "edited")
    s = run(tmp_path, data, out, judge_backend=judge_backend({"ANS-1": 1}))
    # judged again (the unchanged real prompt is answered from the LLM cache here)
    assert s.judged_now == 3 and s.already_judged == 0
    rows = read_judgments(out / "judgments.jsonl")
    assert len(rows) == 6 and [r["judge_prompt"] for r in rows[3:]] == ["edited"] * 3


def test_a_failed_judge_call_is_unscored_and_retried_next_run(tmp_path, data):
    out = tmp_path / "run"
    s = run(tmp_path, data, out, judge_backend=judge_backend({"ANS-1": 5, "ANS-2": "fail"}))
    b = judged(s)
    # ANS-3 has no rule either: the mock fails that call too
    assert b["n"] == 1 and b["unscored"] == 2 and b["failed"] == 2 and b["unusable"] == 0
    assert s.judge_failed_now == 2 and s.judged_now == 1
    assert {r["question_id"] for r in read_judgments(out / "judgments.jsonl")} == {"c1"}
    judge = judge_backend({"ANS-1": 1, "ANS-2": 3, "ANS-3": 4})
    s2 = run(tmp_path, data, out, judge_backend=judge)
    assert len(judge.calls) == 2 and s2.judged_now == 2
    b2 = judged(s2)
    assert b2["n"] == 3 and b2["unscored"] == 0 and b2["mean"] == 4.0


def test_an_unusable_judge_answer_is_kept_and_counted(tmp_path, data):
    out = tmp_path / "run"
    s = run(tmp_path, data, out, judge_backend=judge_backend({"ANS-1": 9, "ANS-2": 2, "ANS-3": 2}))
    b = judged(s)
    assert b["n"] == 2 and b["unusable"] == 1 and b["unscored"] == 1 and b["mean"] == 2.0
    judge = judge_backend({"ANS-1": 5})
    run(tmp_path, data, out, judge_backend=judge)
    assert judge.calls == []  # the judge answered; asking again would give the same answer


def test_failed_answers_are_not_judged_but_counted(tmp_path, data):
    ANSWERS["c2"] = "FAIL"
    judge = judge_backend({"ANS-1": 4, "ANS-3": 4})
    s = run(tmp_path, data, tmp_path / "run", judge_backend=judge)
    b = judged(s)
    assert len(judge.calls) == 2 and b["no_answer"] == 1 and b["n"] == 2
    assert b["eligible"] == b["n"] + b["unscored"] + b["no_answer"]


def test_a_resumed_run_without_a_judge_keeps_its_earlier_scores(tmp_path, data):
    out = tmp_path / "run"
    first = judged(run(tmp_path, data, out, judge_backend=judge_backend({"ANS-1": 5, "ANS-2": 2})))
    s = run(tmp_path, data, out, judge="off")  # resumed with judging off: nothing asked
    b = judged(s)
    assert b["judge_model"] == "mock:judge-1" and b["n"] == first["n"] == 2
    assert b["mean"] == first["mean"] == 3.5
    assert 'judge.mode is "off"' in b["note"] and "earlier judgments by mock:judge-1" in b["note"]
    s = run(tmp_path, data, out)  # auto with no judge model configured: the same scores
    assert judged(s)["mean"] == 3.5 and "earlier judgments" in judged(s)["note"]


def test_mode_off_and_auto_without_a_judge_model_leave_notes(tmp_path, data):
    judge = judge_backend({"ANS-1": 5})
    s = run(tmp_path, data, tmp_path / "off", judge="off", judge_backend=judge)
    assert judge.calls == [] and 'judge.mode is "off"' in judged(s)["note"]
    assert not (tmp_path / "off" / "judgments.jsonl").exists()
    s = run(tmp_path, data, tmp_path / "off2", make_settings(tmp_path, mode="off"))
    assert 'judge.mode is "off"' in judged(s)["note"]
    # auto (the default) with no LLM at all: a note naming the settings to set
    s = run(tmp_path, data, tmp_path / "auto")
    note = judged(s)["note"]
    assert "no judge model" in note and "BIORAG_JUDGE_MODEL" in note and "judge.backend" in note
    assert judged(s)["eligible"] == 3
    from biorag.eval.report.writer import metrics_table

    assert "judged: not judged: no judge model" in metrics_table(s.metrics)


def test_on_without_a_judge_model_fails_before_answering(tmp_path, data):
    out = tmp_path / "on"
    with pytest.raises(BioragError, match=r"judging is required .*BIORAG_JUDGE_MODEL"):
        run(tmp_path, data, out, judge="on")
    assert not (out / "predictions.jsonl").exists()
    with pytest.raises(BioragError, match="judge must be one of auto, on, off"):
        run(tmp_path, data, out, judge="maybe")


def test_nothing_to_judge_without_ideal_answers(tmp_path, data):
    only_mc = tmp_path / "mc.json"
    only_mc.write_text(json.dumps(ITEMS[3:]))
    judge = judge_backend({})
    s = run(tmp_path, only_mc, tmp_path / "mc", judge="on", judge_backend=judge)
    assert judged(s) == {"note": "not judged: no question in this run has an ideal answer",
                         "eligible": 0}  # fmt: skip
    from biorag.eval.report.writer import metrics_table

    assert "judged" not in metrics_table(s.metrics)  # nothing to say on such a dataset


def test_the_judge_is_another_model_than_the_answering_one(tmp_path, data):
    """Answering without an LLM; the judge a scripted model from [judge] settings."""
    script = tmp_path / "judge.jsonl"
    script.write_text(
        "\n".join(
            json.dumps({"match": f"Answer to grade: {a}\\b", "response": {"score": n}})
            for a, n in (("ANS-1", 1), ("ANS-2", 2), ("ANS-3", 3))
        )
    )
    st = make_settings(tmp_path, backend="mock", mock_script=str(script), model="big-judge")
    assert st.llm.backend == "none" and st.judge_llm().backend == "mock"
    s = run(tmp_path, data, tmp_path / "run", st, judge="on")
    b = judged(s)
    assert b["judge_model"] == "mock:big-judge" and b["mean"] == 2.0 and b["n"] == 3
    recs = read_predictions(tmp_path / "run" / "predictions.jsonl")
    assert all(r["accounting"]["stages"] == {} for r in recs)  # no LLM answered
    # the judge went through the LLM cache: judging a fresh directory again hits it
    s2 = run(tmp_path, data, tmp_path / "run2", st)
    assert judged(s2)["accounting"]["cache_hits"] == 3 and judged(s2)["mean"] == 2.0


def test_environment_selects_the_judge_model(tmp_path, data):
    env = {
        "BIORAG_HOME": str(tmp_path / "home"),
        "BIORAG_LLM_BACKEND": "mock",
        "BIORAG_LLM_MOCK_SCRIPT": "dry-run",
        "BIORAG_LLM_CACHE": "false",
        "BIORAG_JUDGE_MODEL": "gpt-judge",
    }
    st = load_settings(environ=env)
    assert st.judge.model == "gpt-judge" and st.llm.model is None
    s = run(tmp_path, data, tmp_path / "run", st)
    b = judged(s)  # the dry-run model answers {"score": 3}, named as the judge model
    assert b["judge_model"] == "mock:gpt-judge" and b["mean"] == 3.0 and b["n"] == 3


def test_the_judge_reuses_the_answering_backend_when_settings_are_the_same(tmp_path):
    st = Settings.model_validate(
        {"home": str(tmp_path / "h"), "llm": {"backend": "mock", "mock_script": "dry-run"}}
    )
    items = [QAItem.model_validate(d) for d in ITEMS]
    answering = SharedLLM(st, MockBackend(responder=lambda r: "x", model="m1"))
    judge, note = open_judge(st, items, answering=answering)
    assert note is None and judge is not None
    assert judge.shared.backend is answering.backend and not judge.owns_backend
    longer = st.model_copy(update={"judge": st.judge.model_copy(update={"max_tokens": 64})})
    judge1, _ = open_judge(longer, items, answering=answering)
    assert judge1 is not None and judge1.shared.backend is answering.backend
    assert judge1.shared.client(None).max_tokens == 64
    other = st.model_copy(update={"judge": st.judge.model_copy(update={"model": "m2"})})
    judge2, _ = open_judge(other, items, answering=answering)
    assert judge2 is not None and judge2.shared.backend is not answering.backend
    assert judge2.model_id == "mock:m2" and judge2.owns_backend


def test_rejudge_an_existing_run_with_another_judge(tmp_path, data, monkeypatch):
    out = tmp_path / "run"
    run(tmp_path, data, out, judge="off")
    # what answering found (a leakage guard's block) is no judge's to drop
    found = json.loads((out / "metrics.json").read_text())
    guard = {"policy": "exclude", "hits": 3, "note": "Source documents: 3 removed."}
    # nor who answered it, nor how it was scored
    answered = {"command": "biorag eval --out run", "commit": "abc1234", "scoring": "biorag"}
    (out / "metrics.json").write_text(json.dumps({**found, "source_exclusion": guard,
                                                  **answered}))  # fmt: skip
    st = make_settings(tmp_path)
    first = judge_backend({"ANS-1": 5, "ANS-2": 5, "ANS-3": 5}, model="j1")
    monkeypatch.setattr(sys, "argv", ["/venv/bin/biorag", "eval", "judge", "--out", "run"])
    metrics, stats = rejudge_run(st, out, backend=first, loader=loader)
    assert metrics["source_exclusion"] == guard
    assert {k: metrics[k] for k in answered} == answered
    assert metrics["judged_by"] == {"command": "biorag eval judge --out run",
                                    "commit": source_commit()}  # fmt: skip
    assert json.loads((out / "metrics.json").read_text())["judged_by"] == metrics["judged_by"]
    assert stats.judged_now == 3 and metrics["methods"]["echo"]["judged"]["mean"] == 5.0
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk["methods"]["echo"]["judged"]["judge_model"] == "mock:j1"
    assert on_disk["methods"]["echo"]["answered"] == 4  # the rest of the metrics kept
    second = judge_backend({"ANS-1": 1, "ANS-2": 2, "ANS-3": 3}, model="j2")
    metrics, stats = rejudge_run(st, out, backend=second, loader=loader)
    assert stats.judged_now == 3 and len(second.calls) == 3
    assert metrics["methods"]["echo"]["judged"]["mean"] == 2.0
    assert len(read_judgments(out / "judgments.jsonl")) == 6
    with pytest.raises(BioragError, match="judging is required"):
        rejudge_run(st, out, loader=loader)  # no judge model configured
    with pytest.raises(BioragError, match="give the run's dataset file"):
        rejudge_run(st, out, data_path=tmp_path / "nope.json", backend=second, loader=loader)


def test_rejudge_a_run_that_left_questions_out(tmp_path, data):
    """A run whose knowledge-graph guard left a question out (run.json's overlap_excluded) is
    judged on its own questions, not refused for the data's larger count."""
    out = tmp_path / "run"
    run(tmp_path, data, out, judge="off")
    extra = {"id": "c9", "dataset": "biocdqa", "question": "Left out?", "gold": "It was.",
             "question_type": "summary"}  # fmt: skip
    data.write_text(json.dumps([*ITEMS, extra]))
    cfg = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**cfg, "overlap_excluded": ["c9"]}))
    first = judge_backend({"ANS-1": 4, "ANS-2": 4, "ANS-3": 4}, model="j1")
    metrics, stats = rejudge_run(make_settings(tmp_path), out, backend=first, loader=loader)
    assert stats.judged_now == 3 and metrics["n_items"] == 4
    (out / "run.json").write_text(json.dumps(cfg))  # not recorded: the counts differ
    with pytest.raises(BioragError, match=r"gave 5 questions but the run in .* had 4"):
        rejudge_run(make_settings(tmp_path), out, backend=first, loader=loader)


def test_a_torn_last_judgment_is_repaired_and_judged_again(tmp_path, data, caplog):
    out = tmp_path / "run"
    run(tmp_path, data, out, judge_backend=judge_backend({"ANS-1": 5, "ANS-2": 2, "ANS-3": 4}))
    path = out / "judgments.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + lines[2][:20])
    judge = judge_backend({"ANS-1": 5, "ANS-2": 2, "ANS-3": 4})
    with caplog.at_level(logging.WARNING, logger="biorag.eval"):
        s = run(tmp_path, data, out, judge_backend=judge)
    assert "that answer will be judged again" in caplog.text
    assert s.judged_now == 1 and s.already_judged == 2 and judged(s)["n"] == 3
    assert path.read_bytes().endswith(b"\n") and len(read_judgments(path)) == 3
    path.write_text("{not json\n" + path.read_text())
    with pytest.raises(BioragError, match="line 1 is not a judgment record"):
        run(tmp_path, data, out, judge_backend=judge)


def test_judging_stops_after_many_failures_in_a_row(tmp_path, data):
    run(tmp_path, data, tmp_path / "run", judge="off")
    items = [QAItem.model_validate(d) for d in ITEMS]
    st = make_settings(tmp_path, concurrency=1)
    down = MockBackend(rules=[{"error": "fatal", "message": "judge down"}], model="j")
    judge, _ = open_judge(st, items, "on", backend=down)
    assert judge is not None and judge.concurrency == 1  # judge.concurrency overrides [llm]

    async def go():
        try:
            return await judge_answers(
                tmp_path / "run", items, ["echo"], judge, max_consecutive_failures=2
            )
        finally:
            await judge.aclose()

    stats = asyncio.run(go())
    assert stats.failed_now == 2 and len(down.calls) == 2
    assert stats.note is not None and "stopped after 2 failed judge calls" in stats.note
