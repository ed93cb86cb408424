"""``biorag eval components``: CLAIMS' component metrics over a benchmark (paper tables 2-5).

For every question the ``claims`` method answers (with the method options given), then
:func:`~biorag.eval.components.evaluate.evaluate_components` scores the run it built: relation
extraction (reference score, semantic similarity, key claim retention: table 2), graph
construction (graph against semantic communities: table 3) and graph summarization
(faithfulness, relevancy and source diversity of the layerwise, graph and semantic summaries:
tables 4-5). The judge is the ``[judge]`` model (the paper's Mixtral-8x7B beside the Mistral
that answers) when one is configured, else the answering ``[llm]``; without any model the judged
metrics are listed as skipped.

One line per question goes to ``OUT/components.jsonl`` as it finishes (a killed run resumes
where it stopped); ``OUT/components.json`` holds the means over the questions that have each
metric, with their counts.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from biorag.asking import PreparedAsk, prepare
from biorag.corpus.datasets import load_dataset
from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.components.evaluate import evaluate_components
from biorag.llm.accounting import Accounting
from biorag.llm.shared import SharedLLM
from biorag.runtime import Runtime
from biorag.util.files import write_json_atomic
from biorag.util.progress import progress_bar

__all__ = ["COMPONENTS_FILE", "SUMMARY_FILE", "run_components", "summarize_components"]

COMPONENTS_FILE = "components.jsonl"
SUMMARY_FILE = "components.json"


def _done(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut off by a kill: that question is scored again
            if isinstance(rec, dict) and not rec.get("error"):
                out[str(rec["question_id"])] = rec
    return out


def _flatten(d: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            if k != "skipped":
                out.update(_flatten(v, f"{prefix}{k}."))
    elif isinstance(d, int | float) and not isinstance(d, bool):
        out[prefix.rstrip(".")] = float(d)
    return out


def summarize_components(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Means of every numeric metric over the records that have it, the community winners'
    shares, and how often each metric was skipped (with the reasons seen)."""
    sums: dict[str, list[float]] = {}
    skipped: dict[str, set[str]] = {}
    wins: dict[str, int] = {}
    for rec in records:
        m = rec.get("metrics") or {}
        for key, value in _flatten(m).items():
            sums.setdefault(key, []).append(value)
        for key, why in (m.get("skipped") or {}).items():
            skipped.setdefault(key, set()).add(str(why))
        winner = (m.get("community") or {}).get("winner")
        if winner:
            wins[winner] = wins.get(winner, 0) + 1
    n_comm = sum(wins.values())
    return {
        "questions": len(records),
        "means": {k: {"mean": sum(v) / len(v), "n": len(v)} for k, v in sorted(sums.items())},
        "community_wins": {k: v / n_comm for k, v in sorted(wins.items())} if n_comm else {},
        "skipped": {k: sorted(v) for k, v in sorted(skipped.items())},
    }


def _load_items(
    dataset: str,
    data_path: str | Path,
    split: str | None,
    setting: str | None,
    limit: int | None,
    index_paths: list[Path] | None,
) -> list[Any]:
    """The dataset's questions; fails without any, or without evidence to retrieve from."""
    items = list(load_dataset(dataset, Path(data_path), split=split, setting=setting,
                              limit=limit).items)  # fmt: skip
    if not items:
        raise BioragError(f"{dataset} at {data_path} gave no questions")
    if any(not it.context for it in items) and not index_paths:
        raise BioragError(
            "claims retrieves evidence: give an index directory, or a setting with passages",
            param="index",
        )
    return items


async def _score_question(
    it: QAItem,
    base: Runtime,
    judge: SharedLLM | None,
    options: dict[str, Any] | None,
) -> dict[str, Any]:
    """Answer one question with ``claims`` (through :func:`biorag.asking.prepare`, as every
    door does) and score its run (the answer's trace): the line for components.jsonl."""
    start = time.perf_counter()
    rec: dict[str, Any] = {"question_id": it.id}
    prepared: PreparedAsk | None = None
    try:
        prepared = prepare(base, it.as_question(), "claims", options)
        answer = await prepared.run()
        acc = prepared.accounting
        judge_llm = judge.client(acc) if judge is not None else base.client(acc)
        rec["metrics"] = await evaluate_components(
            answer.trace, None, judge_llm, base.embedder, base.reranker
        )
        rec["error"] = None
    except BioragError as e:
        rec["error"] = f"{type(e).__name__}: {e}"
    rec["seconds"] = round(time.perf_counter() - start, 3)
    acc = prepared.accounting if prepared is not None else Accounting()
    rec["accounting"] = acc.report()["total"]
    return rec


async def run_components(
    settings: Any,
    dataset: str,
    data_path: str | Path,
    *,
    out_dir: str | Path,
    split: str | None = None,
    setting: str | None = None,
    index_paths: list[Path] | None = None,
    options: dict[str, Any] | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """Answer and score every question not yet in ``OUT/components.jsonl``; write the summary."""
    out = Path(out_dir)
    items = _load_items(dataset, data_path, split, setting, limit, index_paths)
    out.mkdir(parents=True, exist_ok=True)
    path = out / COMPONENTS_FILE
    done = _done(path)
    judge_cfg = settings.judge_llm()  # [llm] with the [judge] keys: the paper's separate judge
    judge = (
        None
        if judge_cfg == settings.llm
        else SharedLLM(settings.model_copy(update={"llm": judge_cfg}))
    )
    base = Runtime(settings, list(index_paths or []))
    todo = [it for it in items if it.id not in done]
    bar = progress_bar(len(todo), "component metrics", unit="question")
    try:
        for it in todo:
            rec = await _score_question(it, base, judge, options)
            with path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
            if not rec["error"]:
                done[it.id] = rec
            bar.update(1)
    finally:
        bar.close()
        if judge is not None:
            await judge.aclose()
        await base.aclose()
    summary = {"dataset": dataset, "n_items": len(items), **summarize_components(
        [done[it.id] for it in items if it.id in done])}  # fmt: skip
    summary["failed"] = len(items) - summary["questions"]
    summary["judge"] = f"{judge_cfg.backend}:{judge_cfg.model or '-'}"
    write_json_atomic(out / SUMMARY_FILE, summary)
    return summary
