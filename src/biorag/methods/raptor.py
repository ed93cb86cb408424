"""RAPTOR baseline: HyDE retrieval, a RAPTOR tree over the chunks, collapsed-tree context.

"We use the HyDE query generation method to retrieve documents. The RAPTOR process is used to
produce a context for each question for QA" (section 4.2). Steps:

1. query: question + options + candidate answer (``build_query(rewrite=False, hyde=True)``; no
   LLM: question + options);
2. retrieval: the top ``k`` chunks per index (or the question's given passages), cut into
   leaves of at most ``leaf_tokens`` tokens at sentence boundaries (RAPTOR's 100-token leaves;
   None keeps the chunks whole); a leaf keeps its chunk's id;
3. the tree (:func:`biorag.summarize.raptor_tree.build_tree`): UMAP (PCA when ``umap`` is not
   installed, said in the notes), Gaussian-mixture soft clustering by BIC, cluster summaries by
   the LLM (stage ``raptor_summary``) or extractive MMR summaries without one, up to
   ``max_depth`` summary layers;
4. context: the collapsed tree - all nodes ranked by embedding cosine to the query (``tree_query``
   ``query``: the HyDE query; ``question``: the question), added until ``token_limit`` tokens;
5. answer: the reader over that context (no LLM: the option-scoring floor).

``answer.details["raptor"]`` holds the tree (layers, node texts, children, chunk ids) and the
selected nodes; the evidence is the retrieved chunks under the selected nodes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from biorag.corpus.chunking import split_by_tokens
from biorag.corpus.tokens import default_counter
from biorag.errors import BioragError
from biorag.methods.base import Answer, QAMethod, Question
from biorag.methods.context import (
    DEFAULT_TOKEN_LIMIT,
    ContextItem,
    Fit,
    hyde_retrieve,
    merge_options,
    read_ranked,
)
from biorag.methods.details import QueryParts, RaptorDetails
from biorag.runtime import Runtime
from biorag.summarize.raptor_tree import (
    ExtractiveClusterSummarizer,
    LLMClusterSummarizer,
    build_tree,
    rank_nodes,
)

#: ``k`` / ``retriever`` None: the ``[retrieval]`` settings. ``reduction``: auto (UMAP if
#: installed, else PCA), umap, pca or none. ``threshold``: the soft-membership probability.
#: ``summary_tokens``: the most tokens of one cluster summary (LLM ``max_tokens``, extractive
#: budget). ``cluster_max_tokens``: a larger cluster is clustered again, or cut, before summary.
#: ``covariance_type`` / ``reg_covar`` (relative to the data's variance): the mixtures';
#: ``"full"`` / ``0`` is RAPTOR's own setting (see ``raptor_tree.gmm_soft_clusters``).
DEFAULTS: dict[str, Any] = {
    "k": None,
    "retriever": None,
    "token_limit": DEFAULT_TOKEN_LIMIT,
    "leaf_tokens": 100,
    "max_depth": 3,
    "max_clusters": 50,
    "threshold": 0.1,
    "reduction": "auto",
    "reduction_dim": 10,
    "summary_tokens": 200,
    "cluster_max_tokens": 3500,
    "tree_query": "query",
    "random_state": 0,
    "covariance_type": "diag",
    "reg_covar": 0.05,
    "reader": "two-call",
}


def make_leaves(passages: list[Any], leaf_tokens: int | None) -> list[tuple[str, str, list[str]]]:
    """``(leaf id, text, [chunk id])`` per sentence-aligned piece of each passage."""

    leaves: list[tuple[str, str, list[str]]] = []
    for p in passages:
        if not p.text.strip():
            continue
        spans = [(0, len(p.text))] if leaf_tokens is None else split_by_tokens(p.text, leaf_tokens)
        pieces = [p.text[s:e].strip() for s, e in spans] or [p.text.strip()]
        for i, piece in enumerate(x for x in pieces if x):
            leaves.append((f"{p.chunk_id}#{i}", piece, [p.chunk_id]))
    return leaves


class Raptor(QAMethod):
    """The RAPTOR baseline. Options: ``DEFAULTS``."""

    name = "raptor"
    needs_index = True

    def __init__(self, runtime: Runtime, **options: Any):
        merged = merge_options(self.name, options, DEFAULTS)
        if merged["tree_query"] not in ("query", "question"):
            raise BioragError("raptor tree_query must be 'query' or 'question'")
        if merged["reduction"] not in ("auto", "umap", "pca", "none"):
            raise BioragError("raptor reduction must be auto, umap, pca or none")
        if merged["covariance_type"] not in ("full", "diag", "spherical", "tied"):
            raise BioragError("raptor covariance_type must be full, diag, spherical or tied")
        if int(merged["max_depth"]) < 1:
            raise BioragError("raptor max_depth must be at least 1")
        super().__init__(runtime, **merged)
        self.last_tree: Any = None

    def _summarizer(self) -> Any:

        n = int(self.options["summary_tokens"])
        if self.rt.llm is None:
            return ExtractiveClusterSummarizer(self.rt.embedder, max_tokens=n)
        return LLMClusterSummarizer(self.rt.llm, max_tokens=n)

    async def answer(self, question: Question) -> Answer:

        o = self.options
        query, passages = await hyde_retrieve(self.rt, question, o)
        leaf_tokens = None if o["leaf_tokens"] is None else int(o["leaf_tokens"])
        counter = default_counter()
        tree = await build_tree(
            make_leaves(passages, leaf_tokens),
            self.rt.embedder,
            self._summarizer(),
            max_depth=int(o["max_depth"]),
            max_clusters=int(o["max_clusters"]),
            threshold=float(o["threshold"]),
            reduction=str(o["reduction"]),
            reduction_dim=int(o["reduction_dim"]),
            cluster_max_tokens=o["cluster_max_tokens"],
            random_state=int(o["random_state"]),
            covariance_type=str(o["covariance_type"]),
            reg_covar=float(o["reg_covar"]),
            counter=counter,
        )
        self.last_tree = tree
        tree_query = query.text if o["tree_query"] == "query" else question.text
        qvec = await asyncio.to_thread(self.rt.embedder.embed_query, tree_query)
        notes = []
        if tree.reduction == "pca":
            notes.append("RAPTOR: umap is not installed; dimensions reduced with PCA")

        def details(items: list[ContextItem], fit: Fit) -> RaptorDetails:
            raptor = tree.to_dict()
            raptor["selected"] = [{"id": it.key, "score": it.score} for it in items]
            return RaptorDetails(
                query=QueryParts.model_validate(query.__dict__), raptor=raptor, **fit
            )

        ranked = [
            ContextItem(node.text, list(node.chunk_ids), score, node.id)
            for node, score in rank_nodes(tree, qvec)
        ]
        return await read_ranked(
            self, question, ranked, passages, details, notes=notes, counter=counter
        )
