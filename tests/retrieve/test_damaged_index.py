"""A damaged index file is named in a one-line error that says to rebuild, never a traceback."""

from __future__ import annotations

import shutil

import pytest

from biorag.corpus.models import Document
from biorag.errors import DamagedFileError
from biorag.retrieve.index import IndexDir
from biorag.retrieve.search import Searcher

DOCS = [
    Document.create(source_id=str(i), text=f"Metformin study {i} lowered glucose in adults.")
    for i in range(30)
]


@pytest.fixture(scope="module")
def built(tmp_path_factory, request):
    from tests.conftest import HashEmbedder

    path = tmp_path_factory.mktemp("idx") / "idx"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(DOCS)
    return path


SEG = "segments/s000001"
FILES = [
    "corpus.sqlite",
    "segments.json",
    f"{SEG}/bm25_terms.json",
    f"{SEG}/bm25_indptr.npy",
    f"{SEG}/bm25_rows.npy",
    f"{SEG}/bm25_tfs.npy",
    f"{SEG}/bm25_lengths.npy",
    f"{SEG}/dense/meta.json",
    f"{SEG}/dense/index.faiss",
    f"{SEG}/dense/ids.json",
]


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
@pytest.mark.parametrize("name", FILES)
def test_each_damaged_file_is_named(built, tmp_path, name, damage):
    from tests.conftest import HashEmbedder

    copy = tmp_path / "idx"
    shutil.copytree(built, copy)
    target = copy / name
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 3] if damage == "truncated" else b"\x00junk\xff" * 64)
    with pytest.raises(DamagedFileError) as info:
        searcher = Searcher(copy, HashEmbedder())
        try:
            searcher.search(["metformin glucose"], k=3, retriever="hybrid")
        finally:
            searcher.close()
    text = str(info.value)
    named = name
    assert named in text and "rebuild the index" in text and "\n" not in text
