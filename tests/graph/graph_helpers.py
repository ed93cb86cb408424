"""Helpers of the graph tests: hand-made vectors, clustered data, claims and a small graph."""

from __future__ import annotations

import hashlib

import numpy as np

from biorag.extract.models import Claim, Triple
from biorag.graph import ClaimGraph, deduplicate_entities


class VecEmbedder:
    """Embeds known texts as given vectors; unknown texts as a hash-seeded random unit vector."""

    model_id = "test:vec"

    def __init__(self, vectors: dict[str, np.ndarray] | None = None, dim: int = 8) -> None:
        self.vectors = {k: np.asarray(v, dtype=np.float64) for k, v in (vectors or {}).items()}
        self._dim = dim if not self.vectors else len(next(iter(self.vectors.values())))
        self.calls: list[list[str]] = []

    @property
    def dim(self) -> int:
        return self._dim

    def _one(self, text: str) -> np.ndarray:
        if text in self.vectors:
            v = self.vectors[text]
        else:
            seed = int(hashlib.md5(text.encode()).hexdigest()[:8], 16)
            v = np.random.default_rng(seed).standard_normal(self._dim)
        return v / np.linalg.norm(v)

    def embed(self, texts, *, batch_size=None, show_progress=False):
        self.calls.append(list(texts))
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return np.stack([self._one(t) for t in texts]).astype(np.float32)

    def embed_query(self, text):
        return self.embed([text])[0]


def gram_vectors(gram: list[list[float]]) -> np.ndarray:
    """Unit vectors whose pairwise cosines are the given Gram matrix (Cholesky rows)."""
    return np.linalg.cholesky(np.asarray(gram, dtype=np.float64))


def clustered_vectors(n: int, dim: int = 32, seed: int = 0, per_cluster: int = 5) -> np.ndarray:
    """Random centres plus noise: within-cluster cosines straddle 0.8, so UPGMA must decide."""
    rng = np.random.default_rng(seed)
    n_centres = max(1, n // per_cluster)
    centres = rng.standard_normal((n_centres, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    assign = rng.integers(0, n_centres, n)
    sigma = rng.uniform(0.3, 0.6, n_centres)[assign]
    x = centres[assign] + sigma[:, None] * rng.standard_normal((n, dim)) / np.sqrt(dim)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def make_claim(cid: str, s: str | None, p: str, o: str | None, score: float = 0.5) -> Claim:
    triple = Triple(subject=s, predicate=p, object=o) if s is not None and o is not None else None
    return Claim(
        id=cid,
        text=f"claim {cid}: {s} {p} {o}",
        chunk_id=f"ch-{cid}",
        doc_id=f"doc-{cid}",
        triple=triple,
        score=score,
    )


# One-hot entity vectors; "TNF-alpha" and "tumor necrosis factor alpha" share E's vector
# direction (cosine 0.9), so they merge into one node and c7 becomes a self-loop.
ENTITIES = ["A", "B", "C", "D", "E", "F", "G", "H"]


def entity_vectors() -> dict[str, np.ndarray]:
    eye = np.eye(len(ENTITIES) + 1)
    vecs = {name: eye[i] for i, name in enumerate(ENTITIES) if name != "E"}
    vecs["tumor necrosis factor alpha"] = eye[4]
    vecs["TNF-alpha"] = 0.9 * eye[4] + np.sqrt(1 - 0.81) * eye[8]
    return vecs


def small_claims() -> list[Claim]:
    """Two components plus a claim without triple.

    Component 1: a triangle A-B-C (c1, c2, c3), a parallel edge A-B (c6, reversed direction),
    a tail C-D (c4), D-E (c5) and a self-loop on E (c7, "TNF-alpha" = "tumor necrosis factor
    alpha"). Component 2: F-G (c8), G-H (c9). c10 has no triple.
    """
    tnf, tnf_long = "TNF-alpha", "tumor necrosis factor alpha"
    return [
        make_claim("c1", "A", "activates", "B", 0.9),
        make_claim("c2", "B", "binds", "C", 0.8),
        make_claim("c3", "C", "inhibits", "A", 0.7),
        make_claim("c4", "C", "induces", "D", 0.6),
        make_claim("c5", "D", "raises", tnf_long, 0.5),
        make_claim("c6", "B", "feeds back on", "A", 0.4),
        make_claim("c7", tnf, "is also called", tnf_long, 0.3),
        make_claim("c8", "F", "treats", "G", 0.95),
        make_claim("c9", "G", "causes", "H", 0.2),
        make_claim("c10", None, "", None, 0.1),
    ]


def build_small_graph() -> ClaimGraph:
    claims = small_claims()
    names = [n for c in claims if c.triple for n in (c.triple.subject, c.triple.object)]
    clusters = deduplicate_entities(names, VecEmbedder(entity_vectors()))
    return ClaimGraph.build(claims, clusters)
