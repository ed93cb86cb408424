"""Graph: entity deduplication, the local claim multigraph, its layers, denoising and exports.

The CLAIMS graph stage::

    clusters = deduplicate_entities(entity_names, embedder, threshold=0.8)
    graph = ClaimGraph.build(claims, clusters)   # or ClaimGraph.from_claims(claims, embedder)
    report = await denoise(graph, question, "drop", LLMRelevanceJudge(llm, batched=True))
    graph.layers(root_claim_id)                 # what layerwise summarization walks
    to_html(graph, "graph.html", claims_of_interest=[...])
"""

from biorag.graph.claim_graph import ClaimGraph, effective_score
from biorag.graph.dedup import (
    EntityClusters,
    deduplicate_entities,
    is_numeric_entity,
    normalize_name,
)
from biorag.graph.denoise import DenoiseMode, DenoiseReport, denoise, judge_items
from biorag.graph.export import to_graphml, to_html
from biorag.graph.judges import (
    EmbeddingRelevanceJudge,
    JudgeItem,
    LLMRelevanceJudge,
    RelevanceJudge,
    Verdict,
)
from biorag.graph.upgma import ClusterResult, cluster_vectors, upgma_labels

__all__ = [
    "ClaimGraph",
    "ClusterResult",
    "DenoiseMode",
    "DenoiseReport",
    "EmbeddingRelevanceJudge",
    "EntityClusters",
    "JudgeItem",
    "LLMRelevanceJudge",
    "RelevanceJudge",
    "Verdict",
    "cluster_vectors",
    "deduplicate_entities",
    "denoise",
    "effective_score",
    "is_numeric_entity",
    "judge_items",
    "normalize_name",
    "to_graphml",
    "to_html",
    "upgma_labels",
]
