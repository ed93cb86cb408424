"""Denoising the claim graph (CLAIMS, arXiv version of §3.2).

Each claim is judged relevant to the question from its own text plus its 1-hop neighbour
claims (the ``max_context`` best by effective score) by a judge from
:mod:`biorag.graph.judges`. All claims are judged on the same, unmodified graph; the verdicts
are then applied. Modes:

* ``keep``: the ACL version: judge nothing and rely on summarization to ignore noise (no calls);
* ``drop``: remove irrelevant claims (and entity nodes left without claims) from the graph;
* ``downweight``: multiply the weight of irrelevant claims by ``factor`` (default 0.5); their
  effective score ``score * weight`` then ranks them lower in layers and components.

Every judged claim gets ``claim.relevant`` set (None when the judge could not decide); an
undecided claim is always kept at full weight. LLM calls are accounted under stage "denoise".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from biorag.graph.claim_graph import ClaimGraph
from biorag.graph.judges import JudgeItem, RelevanceJudge, Verdict

DenoiseMode = Literal["keep", "drop", "downweight"]
MODES: tuple[str, ...] = ("keep", "drop", "downweight")


@dataclass
class DenoiseReport:
    """What denoising did: counts, the ids it dropped or down-weighted, every verdict."""

    mode: str
    judged: int = 0
    relevant: int = 0
    irrelevant: int = 0
    undecided: int = 0
    dropped: int = 0
    downweighted: int = 0
    factor: float | None = None
    dropped_ids: list[str] = field(default_factory=list)
    downweighted_ids: list[str] = field(default_factory=list)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    judge_stats: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["verdicts"] = {k: asdict(v) for k, v in self.verdicts.items()}
        return out


def judge_items(graph: ClaimGraph, max_context: int = 10) -> list[JudgeItem]:
    """One item per claim (by id): its text and its best ``max_context`` neighbours' texts."""
    items = []
    for cid in sorted(graph.claims):
        near = graph.ordered(graph.neighbors(cid))[:max_context]
        texts = [graph.claims[n].text for n in near]
        items.append(JudgeItem(cid, graph.claims[cid].text, texts, list(near)))
    return items


async def denoise(
    graph: ClaimGraph,
    question: str,
    mode: DenoiseMode = "keep",
    judge: RelevanceJudge | None = None,
    *,
    factor: float = 0.5,
    max_context: int = 10,
) -> DenoiseReport:
    """Judge every claim of ``graph`` against ``question`` and apply ``mode`` in place."""
    if mode not in MODES:
        raise ValueError(f"unknown denoise mode {mode!r}; choose one of {', '.join(MODES)}")
    if mode == "keep":
        return DenoiseReport(mode=mode)
    if judge is None:
        raise ValueError(f"denoise mode {mode!r} needs a judge")
    if mode == "downweight" and not 0.0 <= factor <= 1.0:
        raise ValueError(f"downweight factor must be in [0, 1], got {factor}")
    items = judge_items(graph, max_context)
    verdicts = await judge.judge(question, items) if items else []
    if [v.claim_id for v in verdicts] != [it.claim_id for it in items]:
        raise RuntimeError("the relevance judge must answer one verdict per item, in order")
    report = DenoiseReport(mode=mode, judged=len(verdicts))
    report.verdicts = {v.claim_id: v for v in verdicts}
    irrelevant = []
    for v in verdicts:
        graph.claims[v.claim_id].relevant = v.relevant
        if v.relevant is None:
            report.undecided += 1
        elif v.relevant:
            report.relevant += 1
        else:
            report.irrelevant += 1
            irrelevant.append(v.claim_id)
    if mode == "drop":
        graph.remove_claims(irrelevant)
        report.dropped, report.dropped_ids = len(irrelevant), irrelevant
    else:
        for cid in irrelevant:
            graph.scale_weight(cid, factor)
        report.downweighted, report.downweighted_ids = len(irrelevant), irrelevant
        report.factor = factor
    report.judge_stats = dict(getattr(judge, "stats", {}))
    return report
