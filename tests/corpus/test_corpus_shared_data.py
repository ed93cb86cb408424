"""Optional checks on the real benchmark files in ../shared/data (skipped when absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biorag.config import ChunkingSettings
from biorag.corpus.chunking import chunk_documents
from biorag.corpus.loaders import load_corpora, load_corpus
from biorag.corpus.tokens import TokenCounter

pytestmark = pytest.mark.shared


def test_pubmedqa_corpus(shared_data: Path, counter: TokenCounter) -> None:
    path = shared_data / "pubmedqa" / "ori_pqal.json"
    report = load_corpus(path)
    assert len(report.documents) == 1000 and not report.skipped
    raw = json.loads(path.read_text(encoding="utf-8"))
    for doc in report.documents:
        long_answer = raw[doc.source_id]["LONG_ANSWER"]
        assert long_answer not in doc.text and long_answer not in doc.model_dump_json()
    chunks = chunk_documents(report.documents, ChunkingSettings(), counter)
    assert len(chunks) == 3358  # one chunk per context: none is over max_chunk_tokens
    by_id = {d.id: d for d in report.documents}
    assert all(c.text == by_id[c.doc_id].text[c.start : c.end] for c in chunks)


def test_bioasq_pooled_gold_snippets(shared_data: Path) -> None:
    root = shared_data / "mirage" / "rawdata" / "bioasq"
    files = sorted(root.glob("Task*BGoldenEnriched/*.json"))
    assert len(files) == 25
    report = load_corpora(files)
    assert sum(len(d.spans or []) for d in report.documents) == 21231
    assert len(report.documents) == 13437
    assert not report.skipped
    folder = load_corpus(root)  # the folder holds readme.txt files too; still read as BioASQ
    assert len(folder.documents) == 13437
