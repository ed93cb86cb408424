"""Every loader and dataset reader, fed truncated, corrupted and random files.

What must hold for any input: the call either returns, or raises a :class:`BioragError` whose
message names the file (a clear error, never a traceback); and for the line-based formats, the
records kept plus the records skipped add up to the non-blank lines read.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz import samples

from biorag.corpus.datasets import load_dataset
from biorag.corpus.loaders import load_corpus
from biorag.corpus.loaders.papers import load_paper_abstracts, load_paper_fulltexts
from biorag.errors import BioragError
from biorag.strata.vocab import parse_mesh_xml, parse_uniprot_tsv

FUZZ = settings(
    max_examples=int(os.environ.get("BIORAG_FUZZ_EXAMPLES", "30")),  # more for a deeper run
    deadline=None,
    derandomize=True,  # the same inputs on every run: a failure reproduces
    suppress_health_check=[HealthCheck.too_slow],
)

# (name, sample writer, loader of a path, the line-based count of what it returns or None)
Case = tuple[str, Callable[[Path], Path], Callable[[Path], Any], Callable[[Any], int] | None]

CASES: list[Case] = [
    *(
        (f"corpus-{fmt}", make, lambda p, fmt=fmt: load_corpus(p, fmt),
         (lambda r: len(r.documents) + len(r.skipped)) if fmt == "jsonl" else None)
        for fmt, make in samples.CORPUS_SAMPLES.items()
    ),
    *(
        (f"dataset-{name}", make, lambda p, name=name: load_dataset(name, p),
         (lambda r: r.info["parsed"] + len(r.skipped))
         if name in ("medqa", "medmcqa", "biocdqa") else None)
        for name, make in samples.DATASET_SAMPLES.items()
    ),
    ("papers-abstracts", samples.papers_jsonl, load_paper_abstracts,
     lambda r: len(r.documents) + len(r.skipped)),
    ("papers-fulltexts", samples.papers_jsonl, load_paper_fulltexts, None),
    ("mesh", samples.mesh_xml, parse_mesh_xml, None),
    ("uniprot", samples.uniprot_tsv, parse_uniprot_tsv, None),
]  # fmt: skip
IDS = [c[0] for c in CASES]


def nonblank_lines(data: bytes) -> int:
    """Lines (split on newline, as the JSON Lines readers do) with anything but whitespace."""
    n = 0
    for i, raw in enumerate(data.split(b"\n")):
        text = raw.decode("utf-8", "replace")
        if i == 0:
            text = text.lstrip("\ufeff")
        n += bool(text.strip())
    return n


def check(case: Case, data: bytes, gz: bool = False) -> None:
    name, make, load, count = case
    with tempfile.TemporaryDirectory() as d:
        path = make(Path(d) / "sample")
        path.write_bytes(gzip.compress(data) if gz else data)
        try:
            result = load(path)
        except BioragError as e:
            text = str(e)
            assert path.name in text or str(path) in text, f"{name}: the error names no file: {e}"
            return
        if count is not None and not gz:
            assert count(result) == nonblank_lines(data), name


def original(case: Case) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        return case[1](Path(d)).read_bytes()


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FUZZ
@given(cut=st.floats(0.0, 1.0))
def test_truncated_files(case: Case, cut: float) -> None:
    data = original(case)
    check(case, data[: int(len(data) * cut)])


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FUZZ
@given(edits=st.lists(st.tuples(st.floats(0.0, 1.0), st.binary(min_size=1, max_size=4)),
                      min_size=1, max_size=6))  # fmt: skip
def test_corrupted_files(case: Case, edits: list[tuple[float, bytes]]) -> None:
    data = bytearray(original(case))
    for where, new in edits:
        i = int(len(data) * where)
        data[i : i + len(new)] = new
    check(case, bytes(data))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@FUZZ
@given(data=st.binary(max_size=600))
def test_random_bytes(case: Case, data: bytes) -> None:
    check(case, data)


@pytest.mark.parametrize("case", [c for c in CASES if c[0].startswith("corpus-")], ids=str)
@FUZZ
@given(cut=st.floats(0.0, 1.0))
def test_truncated_gzip(case: Case, cut: float) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = case[1](Path(d) / "sample")
        packed = gzip.compress(path.read_bytes())
        path.write_bytes(packed[: int(len(packed) * cut)])
        try:
            case[2](path)
        except BioragError as e:
            assert path.name in str(e), str(e)
