"""Entity deduplication: exact-name collapse, then UPGMA on entity embeddings (CLAIMS §3.2).

Steps, for the subject and object strings of all triples:

1. **Exact names collapse.** Names equal after Unicode NFKC, case folding and whitespace
   collapsing are one entity before any clustering ("TNF-alpha" = "tnf-ALPHA ").
2. **Numeric entities stay alone** (appendix C): an entity whose non-space characters are
   over half digits ("2019", "12.5%", "1-2") never joins another entity, because embeddings
   of numbers are spuriously similar. They are removed from clustering, which does not change
   how the others cluster (UPGMA distances between the others do not involve them).
3. **UPGMA** (average linkage) on the embeddings of the remaining entities, merging while the
   average cosine similarity is >= ``threshold`` (0.8 in the paper); see
   :mod:`biorag.graph.upgma`. No character-edit distance is used anywhere: "BRCA1" and
   "BRCA2" stay apart unless their embeddings say otherwise. Above ``block_above`` entities
   the run is blocked (:mod:`biorag.graph.blocking`), which gives the same clusters.

Each cluster gets an id ``e0, e1, ...`` (numbered by first appearance in the input) and a
representative name: the most frequent member, then the shortest, then alphabetical.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from biorag.embed.base import Embedder
from biorag.graph.upgma import IndexKind, cluster_vectors


def normalize_name(name: str) -> str:
    """The exact-match key of an entity name: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def is_numeric_entity(name: str) -> bool:
    """True when over half of the non-space characters of ``name`` are digits (appendix C)."""
    chars = [c for c in name if not c.isspace()]
    digits = sum(1 for c in chars if c.isdigit())
    return bool(chars) and 2 * digits > len(chars)


@dataclass(frozen=True)
class EntityClusters:
    """Entity name -> cluster id, cluster members and representative names.

    ``members(cid)`` lists one display form per distinct (normalized) entity, most frequent
    first; any spelling that normalizes to a member resolves with :meth:`canonical`.
    ``exact`` is False only when a blocked run used approximate candidate search or had to
    split an oversized block (see :class:`~biorag.graph.upgma.ClusterResult`).
    """

    cluster_of: dict[str, str]
    member_names: dict[str, tuple[str, ...]]
    names: dict[str, str]
    threshold: float = 0.8
    method: str = "exact"
    exact: bool = True
    stats: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        """The cluster id of ``name`` (any spelling of a member), or None if unknown."""
        return self.cluster_of.get(normalize_name(name))

    def canonical(self, name: str) -> str:
        """The cluster id of ``name``; KeyError when the name was not deduplicated."""
        cid = self.get(name)
        if cid is None:
            raise KeyError(f"entity {name!r} is not among the deduplicated entities")
        return cid

    def members(self, cluster_id: str) -> list[str]:
        """Display names of the cluster's entities, most frequent first."""
        return list(self.member_names[cluster_id])

    def name(self, cluster_id: str) -> str:
        """The representative name of a cluster."""
        return self.names[cluster_id]

    @property
    def cluster_ids(self) -> list[str]:
        return list(self.member_names)

    @property
    def merged(self) -> dict[str, list[str]]:
        """Clusters with more than one distinct entity: cluster id -> members."""
        return {c: list(m) for c, m in self.member_names.items() if len(m) > 1}

    def __len__(self) -> int:
        return len(self.member_names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: settings, counts and the merged clusters."""
        return {
            "threshold": self.threshold,
            "method": self.method,
            "exact": self.exact,
            "entities": len(self.cluster_of),
            "clusters": len(self),
            "merged": {c: {"name": self.names[c], "members": m} for c, m in self.merged.items()},
            "stats": dict(self.stats),
        }


def _display_forms(names: Iterable[str]) -> tuple[list[str], dict[str, str], Counter[str]]:
    """Normalized keys in first-seen order, the most common spelling of each, key counts."""
    spellings: dict[str, Counter[str]] = {}
    counts: Counter[str] = Counter()
    for raw in names:
        if not isinstance(raw, str):
            raise TypeError(f"entity names must be strings, got {type(raw).__name__}")
        key = normalize_name(raw)
        if not key:
            continue
        counts[key] += 1
        spellings.setdefault(key, Counter())[" ".join(raw.split())] += 1
    # Counter.most_common keeps first-insertion order among equal counts
    display = {k: c.most_common(1)[0][0] for k, c in spellings.items()}
    return list(spellings), display, counts


_DIGITS = re.compile(r"\d+")


def _split_by_digits(keys: list[str], labels: np.ndarray, next_label: int) -> int:
    """Split clusters so that all members with digits share the same digit sequence."""
    by_label: dict[int, list[int]] = {}
    for i, label in enumerate(labels.tolist()):
        if label >= 0:
            by_label.setdefault(label, []).append(i)
    for members in by_label.values():
        groups: dict[tuple[str, ...], list[int]] = {}
        for i in members:
            groups.setdefault(tuple(_DIGITS.findall(keys[i])), []).append(i)
        with_digits = [g for sig, g in groups.items() if sig]
        if len(with_digits) <= 1:
            continue
        # The largest digit group keeps the label (and the digit-free names); others split off.
        with_digits.sort(key=len, reverse=True)
        for group in with_digits[1:]:
            labels[group] = next_label
            next_label += 1
    return next_label


def deduplicate_entities(
    names: Iterable[str],
    embedder: Embedder | None = None,
    threshold: float = 0.8,
    block_above: int = 5000,
    *,
    vectors: np.ndarray | None = None,
    max_block: int = 20000,
    index: IndexKind = "auto",
    split_on_digits: bool = True,
) -> EntityClusters:
    """Cluster entity names (with repetitions: counts choose representatives) by embedding.

    ``embedder`` embeds one display form per distinct non-numeric entity; alternatively
    ``vectors`` gives one row per distinct normalized name in first-seen order (all of them,
    numeric ones included; tests and benchmarks). Empty names are ignored.

    ``split_on_digits`` (our addition, not in the paper): names whose digit sequences differ
    never share a cluster ("BRCA1" / "BRCA2", "IL-6" / "IL-8", "type 1" / "type 2 diabetes"),
    since small embedding models place them close together; names without digits stay with the
    largest group of their cluster.
    """
    keys, display, counts = _display_forms(names)
    numeric = [is_numeric_entity(k) for k in keys]
    to_cluster = [i for i, is_num in enumerate(numeric) if not is_num]
    labels = np.full(len(keys), -1, dtype=np.int64)
    method, exact, stats = "exact", True, {}
    if to_cluster:
        if vectors is not None:
            if len(vectors) != len(keys):
                raise ValueError(f"got {len(vectors)} vectors for {len(keys)} distinct names")
            x = np.asarray(vectors, dtype=np.float32)[to_cluster]
        elif embedder is not None:
            x = embedder.embed([display[keys[i]] for i in to_cluster])
        else:
            raise ValueError("deduplicate_entities needs an embedder or vectors")
        result = cluster_vectors(
            x, threshold, block_above=block_above, max_block=max_block, index=index
        )
        labels[to_cluster] = result.labels
        method, exact, stats = result.method, result.exact, dict(result.stats)
    next_label = int(labels.max(initial=-1)) + 1
    if split_on_digits:
        next_label = _split_by_digits(keys, labels, next_label)
    for i, is_num in enumerate(numeric):
        if is_num:
            labels[i] = next_label
            next_label += 1

    cluster_of: dict[str, str] = {}
    grouped: dict[int, list[str]] = {}
    label_to_id: dict[int, str] = {}
    for key, label in zip(keys, labels.tolist(), strict=True):
        cid = label_to_id.setdefault(label, f"e{len(label_to_id)}")
        cluster_of[key] = cid
        grouped.setdefault(label, []).append(key)
    member_names: dict[str, tuple[str, ...]] = {}
    rep: dict[str, str] = {}
    for label, members in grouped.items():
        cid = label_to_id[label]
        ranked = sorted(members, key=lambda k: (-counts[k], len(display[k]), display[k]))
        by_freq = sorted(members, key=lambda k: -counts[k])  # stable: first seen among ties
        member_names[cid] = tuple(display[k] for k in by_freq)
        rep[cid] = display[ranked[0]]
    stats["numeric_entities"] = int(sum(numeric))
    return EntityClusters(
        cluster_of=cluster_of,
        member_names=member_names,
        names=rep,
        threshold=threshold,
        method=method,
        exact=exact,
        stats=stats,
    )
