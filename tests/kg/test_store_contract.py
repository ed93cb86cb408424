"""The KGStore contract, run on every backend: SQLite always, Neo4j when a server is given.

The Neo4j variant runs on the live server of the ``neo4j_live`` fixture (tests/graph_server.py:
``BIORAG_NEO4J_URI`` when set, else ArcadeDB embedded started for the session) and DELETES every
``Entity`` node of that database before each test: point ``BIORAG_NEO4J_URI`` at a throwaway
server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from biorag.kg import KGStore, Triplet, open_store


def T(s: str, p: str, o: str, src: str = "", model: str = "") -> Triplet:
    return Triplet(subject=s, predicate=p, object=o, source_id=src, model=model)


@pytest.fixture(params=["sqlite", "neo4j"])
def store(request: pytest.FixtureRequest, tmp_path) -> Iterator[KGStore]:
    if request.param == "sqlite":
        s = open_store(tmp_path / "kg")
    else:
        live = request.getfixturevalue("neo4j_live")
        s = open_store(live.uri, "neo4j", **live.kw)
        s.clear()  # type: ignore[attr-defined]
    yield s
    s.close()


def test_entities_unique_by_normalized_key(store: KGStore) -> None:
    report = store.add_triplets(
        [T("Vitamin C", "treats", "Scurvy"), T("  vitamin   c ", "prevents", "SCURVY")]
    )
    assert (report.added, report.duplicates, report.invalid) == (2, 0, [])
    assert store.entities() == ["Vitamin C", "Scurvy"]  # first spelling kept, outer space stripped
    assert store.count_entities() == 2
    assert store.has_entity("VITAMIN\tc") and store.has_entity(" scurvy ")
    assert not store.has_entity("vitamin") and not store.has_entity("")


def test_duplicate_triplets_counted_not_stored(store: KGStore) -> None:
    first = store.add_triplets(
        [T("Aspirin", "inhibits", "COX-1", "q1", "m"), T("aspirin", "Inhibits ", "cox-1", "q2")]
    )
    again = store.add_triplets([T("ASPIRIN", "inhibits", "COX-1", "q3")])
    assert (first.added, first.duplicates) == (1, 1)
    assert (again.added, again.duplicates) == (0, 1)
    assert store.count_triplets() == 1
    assert list(store.iter_triplets()) == [T("Aspirin", "inhibits", "COX-1", "q1", "m")]


def test_invalid_triplets_reported_with_index(store: KGStore) -> None:
    batch = [
        T("a", "b", "c"),
        T(" ", "b", "c"),
        T("a", "b", "d"),
        T("a", "\t", ""),
        "not a triplet",
    ]
    report = store.add_triplets(batch)  # type: ignore[arg-type]
    assert report.added == 2 and report.duplicates == 0
    assert report.invalid == [
        (1, "empty subject"),
        (3, "empty predicate, object"),
        (4, "not a Triplet: str"),
    ]
    assert store.entities() == ["a", "c", "d"]


def test_lookup_out_vs_both(store: KGStore) -> None:
    store.add_triplets(
        [
            T("metformin", "treats", "diabetes"),
            T("insulin", "regulates", "glucose"),
            T("diabetes", "raises", "glucose"),
            T("obesity", "causes", "Diabetes"),
        ]
    )
    out = store.triplets_for_entities(["Diabetes"])
    assert [t.text() for t in out] == ["diabetes raises glucose"]
    both = store.triplets_for_entities(["diabetes"], direction="both")
    assert [t.text() for t in both] == [
        "metformin treats diabetes",
        "diabetes raises glucose",
        "obesity causes diabetes",
    ]
    # "diabetes raises glucose" is reached from both ends and listed once
    assert len(store.triplets_for_entities(["glucose", "diabetes"], "both")) == 4
    assert store.triplets_for_entities(["unknown", ""]) == []
    assert store.triplets_for_entities([]) == []
    with pytest.raises(ValueError):
        store.triplets_for_entities(["diabetes"], direction="in")  # type: ignore[arg-type]


def test_insertion_order_kept(store: KGStore) -> None:
    triplets = [T(f"e{i % 7}", f"p{i}", f"e{(i * 3) % 11}", f"q{i}") for i in range(40)]
    report = store.add_triplets(triplets)
    assert report.added == 40
    assert list(store.iter_triplets()) == triplets
    wanted = store.triplets_for_entities(["e5", "e2", "e0"])  # name order does not matter
    assert wanted == [t for t in triplets if t.subject in {"e0", "e2", "e5"}]
    first_seen = list(dict.fromkeys(n for t in triplets for n in (t.subject, t.object)))
    assert store.entities() == first_seen
    assert store.count_triplets() == 40 and store.count_entities() == len(first_seen)
