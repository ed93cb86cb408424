"""The KG build pipeline: halves, sources, the entity index sync with pruning."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.conftest import HashEmbedder

from biorag.errors import BioragError
from biorag.kg.build import (
    _paragraphs,
    build_kg,
    kg_stats,
    read_sources,
    sync_entity_index,
    take_half,
)
from biorag.kg.entity_index import EntityIndex


def test_take_half():
    assert take_half(range(5), "first") == [0, 1]
    assert take_half(range(5), "second") == [2, 3, 4]
    assert take_half(range(5), "all") == [0, 1, 2, 3, 4]
    with pytest.raises(BioragError):
        take_half([], "middle")


def test_paragraphs_keep_their_first_line():
    text = "a b\nc\n\n\nd\n  \ne f\n"
    assert _paragraphs(text) == [(1, "a b c"), (5, "d"), (7, "e f")]


def test_mirage_with_medmcqa_explanations(tmp_path):
    bench = {
        "medmcqa": {
            "m0": {"question": "Drug for malaria?", "options": {"A": "Chloroquine", "B": "X"},
                   "answer": "A"},
            "m1": {"question": "Vitamin for scurvy?", "options": {"A": "Y", "B": "Vitamin C"},
                   "answer": "B"},
        },
        "mmlu": {"u0": {"question": "Q?", "options": {"A": "a", "B": "b"}, "answer": "A"}},
    }  # fmt: skip
    (tmp_path / "benchmark.json").write_text(json.dumps(bench), encoding="utf-8")
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps({"id": "m1", "exp": "Vitamin C prevents scurvy."}) + "\n")
    src = read_sources(
        tmp_path / "benchmark.json", "mirage", split="medmcqa", explanations=dev, half="second"
    )
    assert src.units == 2 and src.kept == 1
    (pair,) = src.pairs
    assert pair.id == "medmcqa/m1" and pair.answer == "Vitamin C"
    assert pair.explanation == "Vitamin C prevents scurvy."
    assert src.where["medmcqa/m1"] == "benchmark.json question medmcqa/m1"
    with pytest.raises(BioragError, match="explanations apply to"):
        read_sources(dev, "jsonl", explanations=dev)
    with pytest.raises(BioragError, match="split applies to") as e:
        read_sources(dev, "text", split="x")
    assert e.value.param == "split"


def test_jsonl_without_usable_records_is_a_format_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(BioragError, match=r"bad.jsonl: no usable record \(first: .*bad.jsonl:1"):
        read_sources(bad, "jsonl")


def test_sync_prune_keeps_vectors_of_remaining_names(tmp_path):
    emb = HashEmbedder()
    assert sync_entity_index(tmp_path, emb, ["Malaria", "Insulin", "Aspirin"]) == (3, 0)
    before = EntityIndex.open(tmp_path, emb)
    calls = len(emb.calls)
    assert sync_entity_index(tmp_path, emb, ["aspirin", "MALARIA"], prune=True) == (0, 1)
    assert len(emb.calls) == calls  # nothing embedded again
    idx = EntityIndex.open(tmp_path, emb)
    assert idx.names == ["Malaria", "Aspirin"] and idx.index.ntotal == 2
    assert np.allclose(idx.vectors, before.vectors[[0, 2]])
    assert idx.search(["insulin"], k=1, min_sim=0.99) == [[]]
    assert sync_entity_index(tmp_path, emb, ["Aspirin", "Heparin"], prune=True) == (1, 1)


def test_build_adds_to_an_existing_graph(tmp_path):
    emb = HashEmbedder()
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps({"subject": "A", "predicate": "p", "object": "B"}) + "\n")
    g = tmp_path / "u.jsonl"
    g.write_text(
        json.dumps({"subject": "a", "predicate": "P", "object": "b"})
        + "\n"
        + json.dumps({"subject": "B", "predicate": "q", "object": "C"})
        + "\n"
    )
    r1 = build_kg(f, "jsonl", tmp_path / "kg", embedder=emb)
    r2 = build_kg(g, "jsonl", tmp_path / "kg", embedder=emb)
    assert (r1.added, r2.added, r2.duplicates, r2.entities_embedded) == (1, 1, 1, 1)
    st = kg_stats(tmp_path / "kg")
    assert st["triplets"] == 2 and st["entities"] == 3 and st["last_build"]["source"] == str(g)
    assert st["top_subjects"][0]["out_degree"] == 1

    class Other(HashEmbedder):
        model_id = "test:other"

    with pytest.raises(BioragError, match="test:hash-64"):
        build_kg(g, "jsonl", tmp_path / "kg", embedder=Other())
