"""TREC run and qrels files, and evaluating a run with ``ir_measures``.

A run line is ``qid Q0 docid rank score tag``; a qrels line is ``qid iteration docid relevance``.
``ir_measures`` (the ``eval`` extra) is imported only by :func:`evaluate_run`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from biorag.errors import BioragError, InputFormatError
from biorag.retrieve.fusion import reciprocal_rank_fusion
from biorag.retrieve.hits import ranked
from biorag.util.files import atomic_writer

Run = dict[str, list[tuple[str, float]]]
Qrels = dict[str, dict[str, int]]

DEFAULT_MEASURES = ("R@1", "R@10", "RR@10", "AP@10", "nDCG@10")


def _check_token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise BioragError(f"TREC {what} {value!r} is empty or contains whitespace; use plain ids")
    return value


def fuse_for_run(
    rankings: Sequence[Sequence[tuple[str, float]]], rrf_k: int = 60, limit: int | None = None
) -> list[tuple[str, float]]:
    """One TREC ranking of a query from the rankings of several indexes (or one).

    trec_eval orders a query's lines by score and refuses a docid listed twice, so a run must
    give each docid once with a score that is comparable across the whole list. One ranking
    keeps its scores and drops repeated docids (a document's later chunks at doc level); several
    rankings, whose scores are on different scales, are fused by reciprocal rank (the fused
    score is what is written), each docid once.
    """

    if len(rankings) == 1:
        seen: set[str] = set()
        out: list[tuple[str, float]] = []
        for d, s in rankings[0]:
            if d not in seen:
                seen.add(d)
                out.append((d, s))
        return out[:limit]
    fused = reciprocal_rank_fusion([ranked(list(r)) for r in rankings], k=rrf_k, limit=limit)
    return [(h.id, h.score) for h in fused]


def write_run(
    path: str | Path, run: Mapping[str, Sequence[tuple[str, float]]], tag: str = "biorag"
) -> Path:
    """Write ``run`` (query id -> ranked ``(docid, score)`` pairs, best first) as a TREC run file.

    Ranks are the 1-based positions in each list. A list that trec_eval would misread (a docid
    twice, or a score above the one before it: trec_eval ranks by score) is refused; make one
    with :func:`fuse_for_run`. The file is written atomically
    (:func:`~biorag.util.files.atomic_writer`): a reader never sees half a file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _check_token(tag, "tag")
    lines: list[str] = []
    for qid, pairs in run.items():
        _check_token(str(qid), "query id")
        seen: set[str] = set()
        last = float("inf")
        for rank, (docid, score) in enumerate(pairs, start=1):
            _check_token(str(docid), "doc id")
            if docid in seen or float(score) > last:
                why = "lists docid twice" if docid in seen else "has scores out of rank order"
                raise BioragError(
                    f"TREC run: query {qid} {why} (at {docid}, rank {rank}); trec_eval ranks "
                    "by score, one line per docid: build the list with fuse_for_run"
                )
            seen.add(docid)
            last = float(score)
            lines.append(f"{qid} Q0 {docid} {rank} {float(score):.10g} {tag}\n")
    with atomic_writer(path) as f:
        f.writelines(lines)
    return path


def read_run(path: str | Path) -> Run:
    """Read a TREC run file into query id -> ``(docid, score)`` pairs ordered by the rank column.

    Not ``ir_measures.read_trec_run``: it drops the rank column and orders by score, which
    reorders fused rankings whose scores tie (see :func:`evaluate_run`)."""
    path = Path(path)
    ranked: dict[str, list[tuple[int, str, float]]] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise InputFormatError(
                    f"{path}:{n}: a TREC run line has 6 fields 'qid Q0 docid rank score tag', "
                    f"got {len(parts)}"
                )
            try:
                rank, score = int(parts[3]), float(parts[4])
            except ValueError:
                raise InputFormatError(
                    f"{path}:{n}: rank {parts[3]!r} or score {parts[4]!r} is not a number"
                ) from None
            ranked.setdefault(parts[0], []).append((rank, parts[2], score))
    return {
        q: [(d, s) for _, d, s in sorted(rows, key=lambda r: r[0])] for q, rows in ranked.items()
    }


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file into query id -> docid -> integer relevance."""
    path = Path(path)
    qrels: Qrels = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise InputFormatError(
                    f"{path}:{n}: a qrels line has 4 fields 'qid iteration docid relevance', "
                    f"got {len(parts)}"
                )
            try:
                rel = int(parts[3])
            except ValueError:
                raise InputFormatError(
                    f"{path}:{n}: relevance {parts[3]!r} is not an integer"
                ) from None
            qrels.setdefault(parts[0], {})[parts[2]] = rel
    return qrels


def _ir_measures() -> Any:
    try:
        import ir_measures
    except ImportError:
        raise BioragError(
            "evaluating a run needs the ir-measures package; install it with "
            "`pip install 'biorag[eval]'` (or `pip install ir-measures`)"
        ) from None
    return ir_measures


def evaluate_run(
    run: Mapping[str, Sequence[tuple[str, float]]],
    qrels: Mapping[str, Mapping[str, int]],
    measures: Sequence[str] = DEFAULT_MEASURES,
    *,
    missing_as_zero: bool = True,
) -> dict[str, float]:
    """Mean of each measure (ir_measures names such as ``"nDCG@10"``) over the judged queries.

    With ``missing_as_zero`` (the default, like ``trec_eval -c``) a query in ``qrels`` that the run
    does not answer counts as 0; otherwise only the queries in both are averaged. Queries that
    are in the run but not in the qrels are ignored. Returns ``{measure name: mean}``.

    Each list is evaluated in the order given: ir_measures re-sorts by score and breaks ties by
    document id, which would reorder fused rankings whose scores tie, so the scores handed to it
    are the list positions (first = highest).
    """
    irm = _ir_measures()
    parsed = {name: irm.parse_measure(name) for name in measures}
    run_dict: dict[str, dict[str, float]] = {}
    for q, pairs in run.items():
        ranked: dict[str, float] = {}
        for i, (d, _score) in enumerate(pairs):
            ranked.setdefault(str(d), float(len(pairs) - i))
        if ranked:
            run_dict[str(q)] = ranked
    qrels_dict = {str(q): {str(d): int(r) for d, r in docs.items()} for q, docs in qrels.items()}
    judged = [q for q in qrels_dict if q in run_dict or missing_as_zero]
    if not judged:
        return {name: 0.0 for name in measures}
    per_query: dict[str, dict[str, float]] = {name: {} for name in measures}
    by_measure = {str(m): name for name, m in parsed.items()}
    if run_dict:
        for metric in irm.iter_calc(list(parsed.values()), qrels_dict, run_dict):
            name = by_measure.get(str(metric.measure))
            if name is not None:
                per_query[name][metric.query_id] = float(metric.value)
    return {
        name: sum(per_query[name].get(q, 0.0) for q in judged) / len(judged) for name in measures
    }
