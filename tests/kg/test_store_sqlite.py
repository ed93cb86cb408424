"""SQLite specifics of the knowledge-graph store: file, schema, persistence, batches, writers."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from biorag.errors import BioragError
from biorag.kg import Triplet, open_store
from biorag.kg.stores.flat_sqlite import SQLiteKGStore


def T(s: str, p: str, o: str, src: str = "") -> Triplet:
    return Triplet(subject=s, predicate=p, object=o, source_id=src)


def test_file_location_schema_and_wal(tmp_path) -> None:
    store = open_store(tmp_path / "kg")
    assert isinstance(store, SQLiteKGStore)
    assert store.path == tmp_path / "kg" / "kg.sqlite" and store.path.is_file()
    store.close()
    db = sqlite3.connect(tmp_path / "kg" / "kg.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "triplets_object" in indexes  # subject_id leads the UNIQUE index of triplets
    plan = " ".join(
        r[3]
        for r in db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM triplets WHERE subject_id IN (1, 2) OR object_id = 3"
        )
    )
    assert "INDEX" in plan and "SCAN triplets" not in plan
    db.close()
    named = open_store(tmp_path / "other.sqlite")
    assert named.path == tmp_path / "other.sqlite"  # type: ignore[attr-defined]
    named.close()


def test_persistence_close_and_reopen(tmp_path) -> None:
    with SQLiteKGStore(tmp_path) as store:
        store.add_triplets([T("Zinc", "supports", "immunity", "q1"), T("zinc", "is a", "metal")])
    with SQLiteKGStore(tmp_path) as store:
        assert store.entities() == ["Zinc", "immunity", "metal"]
        assert [t.source_id for t in store.iter_triplets()] == ["q1", ""]
        report = store.add_triplets(
            [T("ZINC", "supports", "Immunity"), T("metal", "conducts", "heat")]
        )
        assert (report.added, report.duplicates) == (1, 1)
        assert store.count_triplets() == 3 and store.entities()[-1] == "heat"


def test_batches_and_duplicates_across_batches(tmp_path) -> None:
    store = SQLiteKGStore(tmp_path, batch_size=3)
    items = [T(f"s{i % 4}", "rel", f"o{i % 5}") for i in range(30)]  # 20 distinct pairs
    report = store.add_triplets(iter(items))
    assert (report.added, report.duplicates) == (20, 10)
    assert store.count_entities() == 9 and store.count_triplets() == 20
    store.close()


def test_two_writers_on_one_file(tmp_path) -> None:
    a, b = SQLiteKGStore(tmp_path), SQLiteKGStore(tmp_path)
    a.add_triplets([T("x", "r", "y")])
    b.add_triplets([T("y", "r", "z"), T("w", "r", "x")])  # b learns x, y from the file
    report = a.add_triplets([T("z", "r", "w"), T("w", "r", "x")])  # a must see b's z and w
    assert (report.added, report.duplicates) == (1, 1)
    assert a.entities() == ["x", "y", "z", "w"] and a.count_triplets() == 4
    a.close()
    b.close()


def test_failure_mid_stream_keeps_committed_batches(tmp_path) -> None:
    store = SQLiteKGStore(tmp_path, batch_size=2)

    def stream() -> Iterator[Triplet]:
        yield T("a", "r", "b")
        yield T("b", "r", "c")
        yield T("c", "r", "d")
        raise RuntimeError("extractor crashed")

    with pytest.raises(RuntimeError):
        store.add_triplets(stream())
    assert store.count_triplets() == 2 and store.entities() == ["a", "b", "c"]
    report = store.add_triplets([T("c", "r", "d"), T("a", "r", "b")])
    assert (report.added, report.duplicates) == (1, 1)
    assert store.entities() == ["a", "b", "c", "d"]
    store.close()


def test_clear_and_bad_inputs(tmp_path) -> None:
    store = SQLiteKGStore(tmp_path)
    store.add_triplets([T("a", "r", "b")])
    store.clear()
    assert store.count_entities() == 0 and store.count_triplets() == 0
    assert store.add_triplets([T("a", "r", "b")]).added == 1
    store.close()
    (tmp_path / "junk.sqlite").write_text("this is not a database " * 100)
    with pytest.raises(BioragError, match=r"junk\.sqlite"):
        open_store(tmp_path / "junk.sqlite")
    with pytest.raises(BioragError, match="backend"):
        open_store(tmp_path, backend="redis")  # type: ignore[arg-type]
