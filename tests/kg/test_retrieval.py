"""KGRetriever on a hand-made graph with an embedder whose similarities are chosen exactly."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from biorag.kg.entity_index import EntityIndex
from biorag.kg.models import Triplet
from biorag.kg.retrieval import STOP_WORDS, KGRetriever, compat_order_key, search_terms
from biorag.kg.stores.factory import open_store

DIM = 32


def ax(i: int) -> np.ndarray:
    v = np.zeros(DIM)
    v[i] = 1.0
    return v


def mix(a: float, i: int, j: int) -> np.ndarray:
    """A unit vector with cosine ``a`` to axis ``i`` (the rest on axis ``j``)."""
    return a * ax(i) + math.sqrt(1 - a * a) * ax(j)


class DictEmbedder:
    """Known texts (case- and space-insensitive) get the given vectors; any other text a
    hashed vector in dimensions 16..31, orthogonal to every known one."""

    def __init__(self, table: dict[str, np.ndarray], model_id: str = "test:dict"):
        self.table = {" ".join(k.lower().split()): v for k, v in table.items()}
        self.model_id = model_id
        self.dim = DIM
        self.texts: list[str] = []

    def _vec(self, text: str) -> np.ndarray:
        v = self.table.get(" ".join(text.lower().split()))
        if v is None:
            seed = int(hashlib.md5(text.encode()).hexdigest()[:8], 16)
            v = np.zeros(DIM)
            v[16:] = np.random.default_rng(seed).normal(size=16)
        return v / np.linalg.norm(v)

    def embed(self, texts, *, batch_size=None, show_progress=False):
        self.texts.extend(texts)
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([self._vec(t) for t in texts]).astype(np.float32)

    def embed_query(self, text):
        return self.embed([text])[0]


QUESTION = "Which drug treats malaria?"
OPTIONS = ["Chloroquine", "Aspirin", "Insulin", "Heparin"]
Q = 3  # the question's axis; triplet texts are mix(cos, Q, 4)
TRIPLETS = [  # (subject, predicate, object, cosine of the full text, cosine of "s p")
    ("Malaria", "is caused by", "Plasmodium", 0.5, 0.5),
    ("Plasmodium falciparum infection", "is treated with", "Artemisinin", 0.8, 0.8),
    ("Fever", "is a symptom of", "Malaria", 0.7, 0.7),
    ("Malaria", "is common in", "tropics", 0.05, 0.05),
    ("Chloroquine", "treats", "Malaria", 0.9, 0.6),
    ("Insulin", "treats", "diabetes", -0.2, -0.2),
    ("Chloroquine", "treats", "Lupus", 0.3, 0.6),
]
TABLE = {
    QUESTION: ax(Q),
    "malaria": ax(0),
    "Plasmodium falciparum infection": mix(0.95, 0, 1),  # > 0.9: a neighbour of "malaria"
    "Fever": mix(0.85, 0, 2),  # < 0.9: not one
    "Chloroquine": ax(5),
    "Insulin": ax(6),
    "Plasmodium": ax(7),
    "Artemisinin": ax(8),
    "tropics": ax(9),
    "Lupus": ax(10),
    "diabetes": ax(11),
}
for s, p, o, full, sp in TRIPLETS:
    TABLE[f"{s} {p} {o}"] = mix(full, Q, 4)
    TABLE[f"{s} {p}"] = mix(sp, Q, 12)


@pytest.fixture
def graph(tmp_path):
    emb = DictEmbedder(TABLE)
    store = open_store(tmp_path / "kg")
    store.add_triplets(
        Triplet(subject=s, predicate=p, object=o, source_id=f"q{i}")
        for i, (s, p, o, *_) in enumerate(TRIPLETS)
    )
    index = EntityIndex.open(tmp_path / "kg", emb)
    index.sync(store.entities())
    yield store, index, emb
    store.close()


def names(result):
    return [(t.subject, t.object) for t, _ in result.triplets]


def test_search_terms_are_1_to_3_grams_without_stop_words():
    terms = search_terms(
        "What is the drug of choice for malaria?", ["Chloroquine", "Quinine tablets"]
    )
    assert {"what", "is", "the", "of", "for"} <= STOP_WORDS
    assert not {"what", "is", "the", "of", "for"} & {w for t in terms for w in t.split()}
    for t in [
        "drug",
        "choice",
        "malaria",
        "drug choice",
        "choice malaria",
        "drug choice malaria",
        "chloroquine",
        "quinine",
        "tablets",
        "quinine tablets",
    ]:
        assert t in terms
    assert len(terms) == len(set(terms)) == 10
    assert "malaria chloroquine" not in terms  # options are separate segments ...
    stem = "Drug of choice for malaria is"
    assert "malaria chloroquine" not in search_terms(stem, ["Chloroquine"])
    compat = search_terms(stem, ["Chloroquine"], paper_compat=True)
    assert "malaria chloroquine" in compat  # ... the public code joined them into one text


def test_entities_above_0_9_and_triplets_above_0_1_in_rank_order(graph):
    store, index, emb = graph
    r = KGRetriever(store, index, emb).retrieve(QUESTION, OPTIONS)
    matched = {(t, e): s for t, e, s in r.matched_entities}
    assert matched[("malaria", "Malaria")] == 1.0  # exact name match
    assert matched[("malaria", "Plasmodium falciparum infection")] == pytest.approx(0.95, abs=1e-5)
    assert ("malaria", "Fever") not in matched  # cosine 0.85 <= 0.9
    # ranked by the whole triplet text; 0.05 and -0.2 fall under the 0.1 cutoff; the store's
    # insertion order (Malaria/Plasmodium first) is not the result's order
    assert names(r) == [
        ("Chloroquine", "Malaria"),
        ("Plasmodium falciparum infection", "Artemisinin"),
        ("Malaria", "Plasmodium"),
        ("Chloroquine", "Lupus"),
    ]
    assert [round(s, 4) for _, s in r.triplets] == [0.9, 0.8, 0.5, 0.3]
    assert "Chloroquine treats Malaria\n" in r.context() + "\n"


def test_cutoffs_top_n_direction_and_options(graph):
    store, index, emb = graph
    low = KGRetriever(store, index, emb, min_triplet_sim=0.0).retrieve(QUESTION, OPTIONS)
    assert ("Malaria", "tropics") in names(low) and ("Insulin", "diabetes") not in names(low)
    loose = KGRetriever(store, index, emb, min_entity_sim=0.8).retrieve(QUESTION, OPTIONS)
    assert ("Fever", "Malaria") in names(loose)
    top = KGRetriever(store, index, emb, top_n=2).retrieve(QUESTION, OPTIONS)
    assert names(top) == [
        ("Chloroquine", "Malaria"),
        ("Plasmodium falciparum infection", "Artemisinin"),
    ]
    both = KGRetriever(store, index, emb, direction="both").retrieve(QUESTION, OPTIONS)
    assert names(both)[2] == ("Fever", "Malaria")  # reached through its object, score 0.7
    no_opts = KGRetriever(store, index, emb, use_options=False).retrieve(QUESTION, OPTIONS)
    assert "chloroquine" not in no_opts.terms
    assert ("Chloroquine", "Malaria") not in names(no_opts)


def test_paper_compat_ignores_the_object_and_loses_the_rank_order(graph):
    store, index, emb = graph
    emb.texts.clear()
    r = KGRetriever(store, index, emb, paper_compat=True).retrieve(QUESTION, OPTIONS)
    assert "Chloroquine treats" in emb.texts and "Chloroquine treats Malaria" not in emb.texts
    scores = {(t.subject, t.object): s for t, s in r.triplets}
    # the two Chloroquine triplets differ only in the object: the same score in compat mode
    assert scores[("Chloroquine", "Malaria")] == pytest.approx(scores[("Chloroquine", "Lupus")])
    assert scores[("Chloroquine", "Malaria")] == pytest.approx(0.6, abs=1e-5)
    by_score = sorted(r.triplets, key=lambda ts: -ts[1])
    assert [t for t, _ in r.triplets] == sorted((t for t, _ in r.triplets), key=compat_order_key)
    assert [t for t, _ in r.triplets] != [t for t, _ in by_score]
    again = KGRetriever(store, index, emb, paper_compat=True).retrieve(QUESTION, OPTIONS)
    assert names(again) == names(r)  # deterministic
