"""The five-point judged answer score of an evaluation run (BioCDQA's GPT-4 evaluation).

After the runner has answered, :func:`judge_answers` asks a judge model
(:func:`biorag.eval.judging.five_point.five_point_score`) to score the latest successful answer of
every method on every question with an ideal answer
(:func:`~biorag.eval.run.scoring.ideal_answer`): BioCDQA's
questions, every BioASQ question (``meta["ideal_answer"]``, the first) and any summary/free
question with a string gold answer.

Judgments are appended to ``OUT/judgments.jsonl``, one JSON line each::

    {"method", "question_id", "answer_sha256", "judge_model", "judge_prompt",   <- the key
     "score": 1..5 or null, "reason", "raw", "accounting", "seconds", "judged_at"}

keyed by (method, question, SHA-256 of the judged answer text, judge model id, judge prompt
version), so a resumed run judges only answers it has not judged with this judge model and
prompt, a changed answer is judged again and another judge model (or an edited prompt) judges
everything again (older judgments stay in the file). A
judge call that fails is not stored: it is counted (``failed``) and tried again on the next
run. A judge answer without a usable score is stored with ``score: null`` (``unusable``).

``biorag.eval.run.scoring.judged_blocks`` turns the file into each method's ``judged`` block
of ``metrics.json``;
:func:`open_judge` decides from ``[judge]`` (and ``--judge``) whether to judge and builds the
judge model; :func:`rejudge_run` judges an existing run directory again without answering.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biorag.config import Settings
from biorag.corpus.datasets import load_dataset
from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.judging import five_point
from biorag.eval.run.questions import read_run_scope, run_questions
from biorag.eval.run.records import (
    JUDGMENTS_FILE,
    METRICS_FILE,
    PREDICTIONS_FILE,
    RUN_FILE,
    RecordWriter,
    answer_sha256,
    judged_text,
    judgment_key,
    latest_records,
    read_json,
    read_judgments,
    read_predictions,
)
from biorag.eval.run.scoring import ideal_answer, judged_blocks, run_metrics
from biorag.llm.accounting import Accounting
from biorag.llm.factory import make_backend
from biorag.llm.shared import SharedLLM
from biorag.util.files import write_json_atomic
from biorag.util.progress import progress_bar

log = logging.getLogger("biorag.eval")

MODES = ("auto", "on", "off")
# The LLM settings a backend is built from (the rest apply per client: tokens, retries, cache).
_BACKEND_KEYS: tuple[str, ...] = ("backend", "base_url", "model", "api_key_env", "hf_path")
_BACKEND_KEYS += ("load_in_4bit", "mock_script", "timeout_s", "structured_output")
MAX_CONSECUTIVE_FAILURES = 25
NOTE_OFF = 'not judged: judge.mode is "off" (set judge.mode = "auto" or "on")'
NOTE_NO_ITEMS = "not judged: no question in this run has an ideal answer"
NO_MODEL = (
    "no judge model is configured (the judge's backend is 'none'): set judge.backend and "
    "judge.model, e.g. BIORAG_JUDGE_BASE_URL and BIORAG_JUDGE_MODEL for an OpenAI-compatible "
    "server, or an [llm] backend for the judge to inherit"
)


# -- the judge model ---------------------------------------------------------------------------


@dataclass
class JudgeModel:
    """The judge LLM: its backend behind its own concurrency limit, and the LLM cache."""

    shared: SharedLLM
    model_id: str
    concurrency: int
    owns_backend: bool = True

    async def aclose(self) -> None:
        """Close the cache, and the backend unless it is the answering model's."""
        if self.owns_backend:
            await self.shared.aclose()
        elif self.shared.cache is not None:
            self.shared.cache.close()


def open_judge(
    settings: Settings,
    items: list[QAItem],
    mode: str | None = None,
    *,
    backend: Any | None = None,
    answering: SharedLLM | None = None,
) -> tuple[JudgeModel | None, str | None]:
    """(the judge model, None), or (None, why there is no judging) for ``items``.

    ``mode`` (``auto``/``on``/``off``, default ``judge.mode``): ``on`` without a judge model
    is an error. ``backend`` replaces the configured judge backend (tests). When the judge's
    backend settings equal ``[llm]``'s (only e.g. ``max_tokens`` differs), the answering
    model's backend (``answering``) is reused: a local model is not loaded twice.
    """
    mode = mode or settings.judge.mode
    if mode not in MODES:
        raise BioragError(f"judge must be one of {', '.join(MODES)}, not {mode!r}", param="judge")
    if mode == "off":
        return None, NOTE_OFF
    cfg = settings.judge_llm()
    if backend is None and cfg.backend == "none":
        if mode == "on":
            raise BioragError(
                f'judging is required (judge mode "on") but {NO_MODEL}; or set the judge '
                'mode to "auto"',
                param="judge",
            )
        if not any(ideal_answer(it) for it in items):
            return None, NOTE_NO_ITEMS
        return None, f"not judged: {NO_MODEL}"
    if not any(ideal_answer(it) for it in items):
        return None, NOTE_NO_ITEMS
    owns = True
    same = all(getattr(cfg, k) == getattr(settings.llm, k) for k in _BACKEND_KEYS)
    reuse = answering is not None and answering.backend is not None and same
    if backend is None and reuse:
        assert answering is not None
        backend, owns = answering.backend, False
    if backend is None:
        backend = make_backend(settings.model_copy(update={"llm": cfg}))
    shared = SharedLLM(settings.model_copy(update={"llm": cfg}), backend)
    name = getattr(backend, "name", "llm")
    model = getattr(backend, "model", None) or cfg.model or "unknown"
    return JudgeModel(shared, f"{name}:{model}", cfg.concurrency, owns), None


# -- judging -----------------------------------------------------------------------------------


@dataclass
class JudgeStats:
    """What one judging pass did."""

    judged_now: int = 0
    failed_now: int = 0
    already_judged: int = 0
    note: str | None = None  # set when judging stopped early


def _pending(
    items: list[QAItem],
    methods: list[str],
    records: list[dict[str, Any]],
    done: set[tuple[str, str, str, str, str]],
    model_id: str,
    prompt: str,
) -> tuple[list[tuple[str, QAItem, str, str]], int]:
    """(method, item, ideal, answer) still to judge, and how many are judged already."""
    latest = latest_records(records)
    pending: list[tuple[str, QAItem, str, str]] = []
    already = 0
    for it in items:
        ideal = ideal_answer(it)
        if ideal is None:
            continue
        for m in methods:
            rec = latest.get((m, it.id))
            if rec is None or rec.get("error"):
                continue
            text = judged_text(rec)
            if (m, it.id, answer_sha256(text), model_id, prompt) in done:
                already += 1
            else:
                pending.append((m, it, ideal, text))
    return pending, already


def _judgment(
    method: str,
    item: QAItem,
    text: str,
    judge: JudgeModel,
    prompt: str,
    got: five_point.JudgeScore,
    report: dict[str, Any],
    start: float,
) -> dict[str, Any]:
    """The ``judgments.jsonl`` line of one judged answer (``got``: the judge's score)."""
    return {
        "method": method,
        "question_id": item.id,
        "answer_sha256": answer_sha256(text),
        "judge_model": judge.model_id,
        "judge_prompt": prompt,
        "score": got.score,
        "reason": got.reason,
        "raw": got.raw,
        "accounting": {k: report.get(k, {}) for k in ("stages", "total")},
        "seconds": round(time.perf_counter() - start, 4),
        "judged_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _stopped_note(consecutive: int, last: str) -> str:
    """The note of a judging pass stopped after ``consecutive`` failed calls in a row."""
    return (
        f"judging stopped after {consecutive} failed judge calls in a row (last: "
        f"{last}); the answers not judged count as unscored and are judged on the "
        "next run"
    )


async def judge_answers(
    out_dir: str | Path,
    items: list[QAItem],
    methods: list[str],
    judge: JudgeModel,
    *,
    max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES,
) -> JudgeStats:
    """Judge every answer of ``OUT/predictions.jsonl`` not yet in ``OUT/judgments.jsonl``.

    Calls run concurrently (``judge.concurrency`` at once); each judgment is appended as it
    finishes. After ``max_consecutive_failures`` failed calls in a row (the judge server is
    down, say) judging stops with a note; the rest are judged on the next run.
    """
    out = Path(out_dir)
    path = out / JUDGMENTS_FILE
    done = {judgment_key(j) for j in read_judgments(path, repair=True)}
    records = read_predictions(out / PREDICTIONS_FILE)
    prompt = five_point.prompt_version()  # read once: the template files are hashed
    pending, already = _pending(items, methods, records, done, judge.model_id, prompt)
    stats = JudgeStats(already_judged=already)
    if not pending:
        return stats
    log.info("judging %d answers with %s", len(pending), judge.model_id)
    queue = iter(pending)
    state: dict[str, Any] = {"consecutive": 0, "last": "", "stop": False}
    bar = progress_bar(len(pending), "judge", unit="answer")

    async def worker(writer: RecordWriter) -> None:
        for method, item, ideal, text in queue:
            if state["stop"]:
                return
            acc = Accounting()
            start = time.perf_counter()
            try:
                client = judge.shared.client(acc)
                assert client is not None  # a judge model has a backend (open_judge)
                got = await five_point.five_point_score(client, item.question, ideal, text)
            except Exception as e:  # counted and judged again next run; CancelledError passes
                stats.failed_now += 1
                state["consecutive"] += 1
                state["last"] = f"{method} on {item.id}: {type(e).__name__}: {e}"
                log.warning("judge call failed: %s", state["last"])
                state["stop"] = state["consecutive"] >= max_consecutive_failures
                bar.update(1)
                continue
            state["consecutive"] = 0
            writer.append(_judgment(method, item, text, judge, prompt, got, acc.report(), start))
            stats.judged_now += 1
            bar.update(1)

    try:
        with RecordWriter(path) as writer:
            await asyncio.gather(*(worker(writer) for _ in range(max(1, judge.concurrency))))
    finally:
        bar.close()
    if state["stop"]:
        stats.note = _stopped_note(state["consecutive"], state["last"])
        log.warning("%s", stats.note)
    return stats


def run_judged_blocks(
    out_dir: str | Path,
    items: list[QAItem],
    records: list[dict[str, Any]],
    methods: list[str],
    judge: JudgeModel | None,
    note: str | None,
) -> dict[str, dict[str, Any]]:
    """Each method's ``judged`` block of a run: by this run's judge, or, when none judges now
    (judge mode ``off``, no judge model) but the run was judged before, by the latest earlier judge
    and prompt, with a note saying so (a resumed run keeps its scores)."""
    judgments = read_judgments(Path(out_dir) / JUDGMENTS_FILE)
    if judge is not None:
        return judged_blocks(items, records, judgments, methods, judge.model_id, note)
    if not judgments:
        return judged_blocks(items, records, [], methods, None, note)
    last = judgments[-1]
    model = str(last["judge_model"])
    why = f"{note}; " if note else ""
    return judged_blocks(
        items,
        records,
        judgments,
        methods,
        model,
        f"{why}the scores are earlier judgments by {model}",
        prompt=str(last.get("judge_prompt") or ""),
    )


# -- judging an existing run -------------------------------------------------------------------


def rejudge_run(
    settings: Settings,
    out_dir: str | Path,
    *,
    data_path: str | Path | None = None,
    backend: Any | None = None,
    loader: Any | None = None,
) -> tuple[dict[str, Any], JudgeStats]:
    """Judge the answers of a run directory (no answering) and rewrite its ``metrics.json``.

    The questions are loaded again as ``run.json`` recorded them (``data_path`` replaces the
    recorded data path). A judge model is required. Returns (metrics, what was judged now).
    """
    return asyncio.run(
        arejudge_run(settings, out_dir, data_path=data_path, backend=backend, loader=loader)
    )


async def arejudge_run(
    settings: Settings,
    out_dir: str | Path,
    *,
    data_path: str | Path | None = None,
    backend: Any | None = None,
    loader: Any | None = None,
) -> tuple[dict[str, Any], JudgeStats]:
    """:func:`rejudge_run` for code already inside an event loop."""
    started = time.perf_counter()
    out = Path(out_dir)
    cfg = read_json(out / RUN_FILE)
    dataset, methods = str(cfg.get("dataset") or ""), list(cfg.get("methods") or [])
    path = Path(data_path if data_path is not None else str(cfg.get("data_path") or ""))
    if not dataset or not methods:
        raise BioragError(f"{out / RUN_FILE} names no dataset or methods; is {out} a run?")
    if not path.exists():
        raise BioragError(
            f"the run's data {path} does not exist; give the run's dataset file", param="data"
        )
    if loader is None:
        loader = load_dataset
    split, setting = cfg.get("split"), cfg.get("setting")
    loaded = loader(dataset, path, split=split, setting=setting, limit=cfg.get("limit"))
    # the run's questions: those its knowledge-graph guard left out stay out
    items: list[QAItem] = run_questions(read_run_scope(out), list(loaded.items), path)
    judge, note = open_judge(settings, items, "on", backend=backend)
    if judge is None:
        raise BioragError(f"nothing to judge in {out}: {note}")
    try:
        stats = await judge_answers(out, items, methods, judge)
    finally:
        await judge.aclose()
    records = read_predictions(out / PREDICTIONS_FILE)
    judged = judged_blocks(
        items, records, read_judgments(out / JUDGMENTS_FILE), methods, judge.model_id, stats.note
    )
    before = read_json(out / METRICS_FILE) if (out / METRICS_FILE).is_file() else {}
    metrics = run_metrics(
        dataset,
        split,
        setting,
        items,
        records,
        methods,
        judged,
        wall_s=time.perf_counter() - started,
        scoring=str(before.get("scoring") or "official"),  # scored as the run was
    )
    # what the run's answering found (leakage guards, masking) and the command and commit that
    # answered it stand: a judge does not change them; it says who judged (judged_by)
    metrics["judged_by"] = {"command": metrics["command"], "commit": metrics["commit"]}
    for key in ("kg_overlap", "source_exclusion", "masking", "command", "commit"):
        if key in before:
            metrics[key] = before[key]
    write_json_atomic(out / METRICS_FILE, metrics)
    return metrics, stats
