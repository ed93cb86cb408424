"""The corpus store's build state: a document is embedded once every one of its chunks is."""

from __future__ import annotations

import numpy as np

from biorag.corpus.models import Chunk, Document
from biorag.corpus.store import CorpusStore


def test_a_document_is_embedded_when_its_last_chunk_gets_its_vector(tmp_path):
    store = CorpusStore(tmp_path / "c.sqlite")
    a = Document.create(source_id="a", text="one. two. three.")
    b = Document.create(source_id="b", text="four.")
    store.add_documents([a, b])
    chunks = {
        d.id: [
            Chunk(id=f"{d.id}:{i}", doc_id=d.id, index=i, start=0, end=1, text=f"t{i}")
            for i in range(n)
        ]
        for d, n in ((a, 3), (b, 1))
    }
    store.set_chunks(list(chunks.items()))
    rows = store.chunks_without_vectors(10)
    assert len(rows) == 4
    store.set_vectors([s for s, _ in rows[:2]], np.ones((2, 4), np.float32))  # a: 2 of 3
    assert store.state_counts()["embedded"] == 0
    store.set_vectors([s for s, _ in rows[2:]], np.ones((2, 4), np.float32))
    assert store.state_counts()["embedded"] == 2
    store.set_vectors([], np.zeros((0, 4), np.float32))  # an empty batch changes nothing
    assert store.count_chunks(with_vectors=False) == 0
    store.close()
