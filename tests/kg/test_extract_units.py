"""A knowledge-graph build's extraction checkpoint: a build stopped midway (a fault injected
after two batches) resumes with the units it had not extracted and stores what one
uninterrupted build stores; a checkpoint of another extractor, or a torn last line, is not
trusted."""

from __future__ import annotations

import json

import pytest
from tests.conftest import HashEmbedder

import biorag.kg.build as kg_build
from biorag.kg.build import build_kg
from biorag.kg.extract_units import CHECKPOINT, UNITS_PER_BATCH
from biorag.kg.stores.factory import open_store

DRUGS = ["Chloroquine", "Insulin", "Isoniazid", "Metformin", "Aspirin", "Heparin", "Warfarin"]
N = 2 * UNITS_PER_BATCH + 10  # three batches


def medmcqa(path, n: int = N):
    rows = []
    for i in range(n):
        drug = DRUGS[i % len(DRUGS)]
        rows.append({
            "id": f"m{i}", "question": f"Which drug treats disease number {i}?", "opa": drug,
            "opb": "Placebo", "opc": "Saline", "opd": "Water", "cop": 1,
            "choice_type": "single", "subject_name": "Pharmacology",
            "exp": f"{drug} treats disease number {i}.",
        })  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def stored(kg):
    store = open_store(kg)
    try:
        return [(t.subject, t.predicate, t.object, t.source_id) for t in store.iter_triplets()]
    finally:
        store.close()


class Stop(Exception):
    pass


def stopping_after(batches: int):
    real = kg_build.local_batches

    def make(*args, **kw):
        run = real(*args, **kw)

        def gen(todo):
            for i, results in enumerate(run(todo)):
                if i == batches:
                    raise Stop
                yield results

        return gen

    return make


def test_a_stopped_build_resumes_with_the_units_left(tmp_path, monkeypatch):
    src = medmcqa(tmp_path / "dev.json")
    emb = HashEmbedder()
    whole = build_kg(src, "medmcqa", tmp_path / "whole", embedder=emb)
    assert whole.units_resumed == 0 and not (tmp_path / "whole" / CHECKPOINT).exists()

    monkeypatch.setattr(kg_build, "local_batches", stopping_after(2))
    with pytest.raises(Stop):
        build_kg(src, "medmcqa", tmp_path / "kg", embedder=emb)
    lines = (tmp_path / "kg" / CHECKPOINT).read_text().splitlines()
    assert len(lines) == 1 + 2 * UNITS_PER_BATCH  # the header, then the two batches' units
    monkeypatch.undo()

    again = build_kg(src, "medmcqa", tmp_path / "kg", embedder=emb)
    assert again.units_resumed == 2 * UNITS_PER_BATCH
    assert stored(tmp_path / "kg") == stored(tmp_path / "whole")
    assert (again.added, again.extracted, len(again.dropped)) == (
        whole.added, whole.extracted, len(whole.dropped),
    )  # fmt: skip
    assert not (tmp_path / "kg" / CHECKPOINT).exists()


def test_a_checkpoint_of_another_extraction_is_set_aside(tmp_path, monkeypatch):
    src = medmcqa(tmp_path / "dev.json")
    emb = HashEmbedder()
    monkeypatch.setattr(kg_build, "local_batches", stopping_after(1))
    with pytest.raises(Stop):
        build_kg(src, "medmcqa", tmp_path / "kg", embedder=emb, use_explanation=False)
    monkeypatch.undo()
    report = build_kg(src, "medmcqa", tmp_path / "kg", embedder=emb)
    assert report.units_resumed == 0  # extracted without explanations: not reused
    assert (tmp_path / "kg" / (CHECKPOINT + ".stale")).is_file()


def test_a_torn_last_line_is_extracted_again(tmp_path, monkeypatch):
    src = medmcqa(tmp_path / "dev.json")
    emb = HashEmbedder()
    monkeypatch.setattr(kg_build, "local_batches", stopping_after(1))
    with pytest.raises(Stop):
        build_kg(src, "medmcqa", tmp_path / "kg", embedder=emb)
    monkeypatch.undo()
    path = tmp_path / "kg" / CHECKPOINT
    text = path.read_text()
    path.write_text(text[: len(text) - 15])  # the last unit's line cut short, as by a kill
    report = build_kg(src, "medmcqa", tmp_path / "kg", embedder=emb)
    assert report.units_resumed == UNITS_PER_BATCH - 1
    whole = build_kg(src, "medmcqa", tmp_path / "whole", embedder=emb)
    assert stored(tmp_path / "kg") == stored(tmp_path / "whole") and whole.added == report.added


def test_units_sharing_a_source_id_keep_their_own_triplets():
    import asyncio

    from biorag.kg.extract_units import extract_batch

    units = [  # two paragraphs at line 1 of two files named abstract.txt
        {"sid": "abstract.txt:1", "hash": "a", "text": "Metformin reduces hepatic glucose output."},
        {"sid": "abstract.txt:1", "hash": "b", "text": "Aspirin inhibits platelet aggregation."},
    ]
    got = asyncio.run(extract_batch(units, None, 1, True))
    subjects = [[t["subject"].lower() for t in r["triplets"]] for r in got]
    assert subjects == [["metformin"], ["aspirin"]]


def test_a_batch_keeps_every_llm_slot_busy():
    from biorag.kg.extract_units import batches_of

    assert batches_of(1, 256, None) == UNITS_PER_BATCH  # the rules: the default batch
    assert batches_of(64, 256, 8) == 64 * 16  # 16 calls for 8 slots, not one
    assert batches_of(1, 2, None) == 2  # a small executor batch is kept


def test_appending_after_a_torn_line_starts_a_new_one(tmp_path):
    from biorag.executor.checkpoint import read_checkpoint, run_checkpointed

    header = {"checkpoint": 1}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(header) + '\n{"sid": "1", "hash": "h", "x": 1}\n{"sid": "2", "ha')
    units = [{"sid": str(i), "hash": "h"} for i in range(1, 4)]

    def run(todo):
        yield [{**u, "x": 2} for u in todo]

    done, resumed = run_checkpointed(units, path, header, run, "test")
    assert resumed == 1 and len(done) == 3
    assert len(read_checkpoint(path, header)) == 3  # every line whole again


def test_a_second_build_writing_the_same_checkpoint_is_refused(tmp_path):
    from biorag.errors import BioragError
    from biorag.executor.checkpoint import run_checkpointed
    from biorag.util.jsonl_log import RecordWriter

    path = tmp_path / "c.jsonl"

    def run(todo):
        yield [{**u, "x": 1} for u in todo]

    with RecordWriter(path), pytest.raises(BioragError, match="another run is writing"):
        run_checkpointed([{"sid": "1", "hash": "h"}], path, {"checkpoint": 1}, run, "test")
