"""Shared pieces of the baseline-method tests: a small corpus in three topics, runtimes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from biorag.config import Settings
from biorag.corpus.loaders import load_corpus
from biorag.methods.base import Question
from biorag.retrieve.index import IndexDir
from biorag.runtime import Runtime

DRY_RUN = {"backend": "mock", "mock_script": "dry-run", "cache": False}

# Three topics, two documents each: enough leaves for a RAPTOR tree with more than one layer.
DOCS = [
    {
        "id": "d1",
        "text": "Zelocitinib inhibits the enzyme KRX1 in hepatocytes. Zelocitinib was well "
        "tolerated in a phase 1 trial of adults with liver disease.",
    },
    {
        "id": "d2",
        "text": "The enzyme KRX1 drives fibrosis of the liver. KRX1 expression is increased in "
        "cirrhosis and falls when the fibrosis regresses.",
    },
    {
        "id": "d3",
        "text": "Atorvastatin lowers LDL cholesterol in adults. Statins reduce the risk of "
        "myocardial infarction in patients with hypercholesterolemia.",
    },
    {
        "id": "d4",
        "text": "High LDL cholesterol is a cause of atherosclerosis. Lowering LDL cholesterol "
        "with statins slows the progression of coronary plaque.",
    },
    {
        "id": "d5",
        "text": "Vitamin D supplementation showed no significant effect on fracture risk. "
        "Vitamin D deficiency is common in elderly people living in care homes.",
    },
    {
        "id": "d6",
        "text": "Calcium and vitamin D together did not prevent hip fractures in older women. "
        "Falls are the main cause of hip fractures in the elderly.",
    },
]
QUESTION = Question(
    id="q1",
    text="Could zelocitinib reduce fibrosis of the liver?",
    options={"A": "yes", "B": "no", "C": "maybe"},
)
GIVEN = Question(
    id="g1",
    text="Does KRX1 drive liver fibrosis?",
    options={"A": "yes", "B": "no", "C": "maybe"},
    passages=[
        "Vitamin D supplementation showed no significant effect on fracture risk.",
        "The enzyme KRX1 drives fibrosis of the liver. KRX1 expression is increased in cirrhosis.",
        "Zelocitinib inhibits the enzyme KRX1 in hepatocytes.",
    ],
)


def build_index(tmp_path: Path, emb) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    idx = IndexDir(tmp_path / "idx", emb, name="topics")
    idx.add(load_corpus(path))
    idx.close()
    return tmp_path / "idx"


def make_runtime(
    tmp_path: Path, emb, index: Path | None = None, llm: dict | None = None, **components
) -> Runtime:
    """A runtime with the embedder ``emb``, settings ``llm`` and ready-made ``components``
    (``llm=`` an LLM client is given as ``components``' ``client``)."""
    data: dict = {"home": str(tmp_path / "home")}
    if llm:
        data["llm"] = llm
    if "client" in components:
        components["llm"] = components.pop("client")
    return Runtime(
        Settings.model_validate(data), [index] if index else [], embedder=emb, **components
    )


class KeywordReranker:
    """Scores a text by how many times it names ``word`` (a reranker whose order is known)."""

    def __init__(self, word: str):
        self.word = word.lower()
        self.queries: list[str] = []

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        self.queries.append(query)
        return np.array([t.lower().count(self.word) for t in texts], dtype=np.float32)

    def rerank(self, query, items, key=str, top_k=None):
        scores = self.score(query, [key(it) for it in items])
        order = np.argsort(-scores, kind="stable")
        return [(items[i], float(scores[i])) for i in order]


__all__ = [
    "DOCS",
    "DRY_RUN",
    "GIVEN",
    "QUESTION",
    "KeywordReranker",
    "build_index",
    "make_runtime",
]
