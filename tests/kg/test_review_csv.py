"""Expert review through CSV: write, edit as an expert would, import; bad rows by line."""

from __future__ import annotations

import csv

import pytest

from biorag.errors import InputFormatError
from biorag.kg import Triplet, import_review_csv, open_store, write_review_csv
from biorag.kg.review import HEADER


def T(s: str, p: str, o: str, src: str = "", model: str = "") -> Triplet:
    return Triplet(subject=s, predicate=p, object=o, source_id=src, model=model)


ORIGINAL = [
    T("Vitamin C", "deficiency causes", "scurvy", "q1", "gpt-4o-mini"),
    T("Aspirin", "treats", "scurvy", "q2", "gpt-4o-mini"),  # wrong: the expert fixes it
    T("Metformin", "treats", "type 2 diabetes", "q3", "rule-based"),
    T('Ringer\'s "lactate"', "contains, among others", "sodium", "q4", "rule-based"),
]


def test_round_trip_through_expert_edit(tmp_path) -> None:
    store = open_store(tmp_path / "kg")
    store.add_triplets(ORIGINAL)
    path = write_review_csv(store, tmp_path / "review" / "triplets.csv")
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "subject,predicate,object,source_id,model"
    assert [
        Triplet(**dict(zip(HEADER, r, strict=True)))
        for r in list(csv.reader(text.splitlines()))[1:]
    ] == ORIGINAL

    lines = text.splitlines()
    lines[2] = lines[2].replace("Aspirin,treats", "Aspirin,inhibits").replace("scurvy", "COX-1")
    del lines[3]  # the expert deletes Metformin (line 4)
    lines += [
        "Zinc,supports,,q9,expert",  # line 5 after the edit: empty object
        "Iron,deficiency causes",  # line 6: too few columns
        '"Folic\nacid",prevents,neural tube defects,q10,expert',  # lines 7-8: line break in a name
        "Iodine,prevents,goitre,q11,expert,extra",  # line 9: too many columns
        "",  # blank: skipped
        "Vitamin D,prevents,rickets,,,",  # line 11: trailing empty cell ignored
        "vitamin c,Deficiency  causes,Scurvy,q12,expert",  # line 12: duplicate of line 2
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    reviewed = open_store(tmp_path / "reviewed")
    report = import_review_csv(path, reviewed)
    assert report.rejected == [
        (5, "empty object"),
        (6, "expected 5 columns (subject,predicate,object,source_id,model), found 2"),
        (9, "expected 5 columns (subject,predicate,object,source_id,model), found 6"),
    ]
    assert (report.added, report.duplicates) == (5, 1)
    assert [t.text() for t in reviewed.iter_triplets()] == [
        "Vitamin C deficiency causes scurvy",
        "Aspirin inhibits COX-1",
        'Ringer\'s "lactate" contains, among others sodium',
        "Folic\nacid prevents neural tube defects",
        "Vitamin D prevents rickets",
    ]
    assert next(reviewed.iter_triplets()).source_id == "q1"  # provenance of the first copy
    assert "3 rejected (line 5: empty object" in report.summary()
    assert [p.name for p in path.parent.iterdir()] == ["triplets.csv"]  # no temporary files left


def test_header_is_required(tmp_path) -> None:
    store = open_store(tmp_path / "kg")
    bad = tmp_path / "bad.csv"
    bad.write_text("head,relation,tail\na,b,c\n", encoding="utf-8")
    with pytest.raises(
        InputFormatError, match=r"bad\.csv.*subject,predicate,object,source_id,model"
    ):
        import_review_csv(bad, store)
    headless = tmp_path / "headless.csv"
    headless.write_text("Vitamin C,prevents,scurvy,q1,m\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"headless\.csv"):
        import_review_csv(headless, store)
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputFormatError, match="empty"):
        import_review_csv(empty, store)
    with pytest.raises(InputFormatError, match="does not exist"):
        import_review_csv(tmp_path / "missing.csv", store)
    assert store.count_triplets() == 0


def test_spreadsheet_variants(tmp_path) -> None:
    # a byte-order mark, CRLF line ends, capitalised three-column header
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffSubject,Predicate,Object\r\nZinc,supports,immunity\r\n".encode())
    store = open_store(tmp_path / "kg")
    report = import_review_csv(path, store)
    assert (report.added, report.rejected) == (1, [])
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("subject,predicate,object\ncaf\xe9,is,drink\n".encode("latin-1"))
    with pytest.raises(InputFormatError, match="UTF-8"):
        import_review_csv(latin1, store)


def test_write_from_a_list_of_triplets(tmp_path) -> None:
    path = write_review_csv(ORIGINAL[:2], tmp_path / "t.csv")
    store = open_store(tmp_path / "kg")
    assert import_review_csv(path, store).added == 2
    assert list(store.iter_triplets()) == ORIGINAL[:2]
