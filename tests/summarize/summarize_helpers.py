"""Helpers of the summarize tests: a fake claim graph from an explicit adjacency, a scripted
reranker, and mock-LLM answers derived from the prompt."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from biorag.extract.models import Claim
from biorag.llm import LLM, ChatRequest, MockBackend


class FakeGraph:
    """The graph interface the summarize stage reads, built from an undirected edge list."""

    def __init__(
        self,
        texts: dict[str, str],
        edges: Iterable[tuple[str, str]],
        scores: dict[str, float] | None = None,
    ) -> None:
        scores = scores or {}
        self.claims = {
            cid: Claim(
                id=cid, text=t, chunk_id=f"ch_{cid}", doc_id=f"d_{cid}", score=scores.get(cid, 0.0)
            )
            for cid, t in texts.items()
        }
        self.adj: dict[str, set[str]] = {cid: set() for cid in texts}
        for a, b in edges:
            self.adj[a].add(b)
            self.adj[b].add(a)
        self.layer_calls = 0

    def neighbors(self, claim_id: str) -> set[str]:
        return set(self.adj.get(claim_id, set()))

    def layers(self, root_claim_id: str) -> list[list[str]]:
        self.layer_calls += 1
        dist = {root_claim_id: 0}
        queue = deque([root_claim_id])
        while queue:
            cur = queue.popleft()
            for n in sorted(self.adj[cur]):
                if n not in dist:
                    dist[n] = dist[cur] + 1
                    queue.append(n)
        out: list[list[str]] = [[] for _ in range(max(dist.values()) + 1)]
        for cid, d in dist.items():
            out[d].append(cid)
        return out


class MapReranker:
    """Scores a text by the claim text it starts with (``scores`` by claim text; else 0)."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[list[str]] = []

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = []
        for t in texts:
            hit = [v for k, v in self.scores.items() if t.startswith(k)]
            out.append(max(hit) if hit else 0.0)
        return np.asarray(out, dtype=np.float32)


def claim_in_prompt(req: ChatRequest) -> str:
    """The claim text of a per-claim layer prompt."""
    m = re.search(r'^Claim:\n<passage id="[^"]*">\n(.*?)\n', req.last_user_message(), re.M)
    return m.group(1).strip() if m else ""


def default_responder(req: ChatRequest) -> str:
    """Short deterministic answers for every summarize stage."""
    msg = req.last_user_message()
    if req.stage == "layer_summary_batch":
        ids = re.findall(r"^### Claim id: (\S+)$", msg, re.M)
        return json.dumps({"summaries": [{"claim_id": i, "summary": f"batch {i}"} for i in ids]})
    if req.stage == "layer_summary":
        return f"summary of <{claim_in_prompt(req)}>"
    if req.stage == "compress":
        return "merged facts."
    if req.stage == "coi_test_summary":
        m = re.search(r'^Central claim:\n<passage id="[^"]*">\n(.*?)\n', msg, re.M)
        return f"{m.group(1) if m else ''} matters."
    return "?"


def make_llm(
    rules: list[dict[str, Any]] | None = None,
    responder: Callable[[ChatRequest], str] | None = default_responder,
) -> tuple[LLM, MockBackend]:
    """An LLM over a MockBackend (rules first, then ``responder``) and the backend itself."""
    backend = MockBackend(rules=rules or [], responder=responder)
    return LLM(backend, retry_base_delay=0.0), backend


def stage_calls(backend: MockBackend, stage: str) -> list[ChatRequest]:
    """The requests the backend saw at ``stage``."""
    return [r for r in backend.calls if r.stage == stage]
