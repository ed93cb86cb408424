"""IP-RAR over split corpora: abstract-level lists from an abstract index, full-text-level lists
from a full-text index (both built from one papers file), ``R_i`` counted per paper; the proxy
unchanged; the option errors; and the command line end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from methods_helpers import GIVEN, QUESTION, make_runtime
from typer.testing import CliRunner

from biorag.config import ChunkingSettings
from biorag.corpus.loaders import load_corpus
from biorag.errors import BioragError
from biorag.methods.iprar import IPRAR
from biorag.retrieve.index import IndexDir
from biorag.retrieve.search import MultiSearcher, Searcher

PAPERS = [
    {
        "pid": "P1",
        "title": "KRX1 and liver fibrosis",
        "abstract": "Zelocitinib inhibits KRX1 and reduces fibrosis of the liver in mice.",
        "full_text": "# Introduction\nFibrosis of the liver is scarring after chronic injury. "
        "KRX1 is an enzyme of hepatocytes.\n\n# Results\nZelocitinib inhibited KRX1 in "
        "hepatocytes. Zelocitinib reduced fibrosis of the liver by half.\n\n# Discussion\n"
        "Zelocitinib could reduce liver fibrosis in patients.",
        "year": 2022,
        "keywords": ["KRX1", "zelocitinib"],
    },
    {
        "pid": "P2",
        "title": "Statins",
        "abstract": "Atorvastatin lowers LDL cholesterol in adults.",
        "full_text": "# Methods\nAdults took atorvastatin for a year.\n\n# Results\nLDL "
        "cholesterol fell and myocardial infarctions were fewer.",
    },
    {
        "pid": "P3",
        "title": "Vitamin D",
        "abstract": "Vitamin D did not change fracture risk in the elderly.",
        "full_text": "# Results\nFractures were as frequent with vitamin D as without.",
    },
    {
        "pid": "P4",
        "title": "Cirrhosis",
        "abstract": "KRX1 expression rises in cirrhosis of the liver.",
    },
]
GRANULARITIES = ("question", "virtual", "keyword")
SPLIT = {"abstract_corpus": "abstracts", "fulltext_corpus": "fulltexts"}


def write_papers(path: Path) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in PAPERS), encoding="utf-8")
    return path


@pytest.fixture
def two_indexes(tmp_path, hash_embedder) -> tuple[list[Path], dict[str, set[str]]]:
    """The abstract and the full-text index of :data:`PAPERS` (small chunks, so a full text is
    several chunks), and each index's document ids."""
    papers = write_papers(tmp_path / "papers.jsonl")
    small = ChunkingSettings(chunk_tokens=24, overlap_tokens=0, max_chunk_tokens=48)
    paths, doc_ids = [], {}
    for name, fmt in (("abstracts", "paper-abstracts"), ("fulltexts", "paper-fulltexts")):
        loaded = load_corpus(papers, fmt)
        doc_ids[name] = {d.id for d in loaded.documents}
        idx = IndexDir(tmp_path / "idx" / name, hash_embedder, small, name=name)
        idx.add(loaded)
        idx.close()
        paths.append(tmp_path / "idx" / name)
    return paths, doc_ids


def test_split_levels_search_their_own_corpus(tmp_path, hash_embedder, two_indexes):
    paths, doc_ids = two_indexes
    rt = make_runtime(tmp_path, hash_embedder)
    rt.index_paths = paths
    ans = IPRAR(rt, k=4, **SPLIT).answer_sync(QUESTION)
    d = ans.model_dump()["details"]
    assert d["levels"] == {"abstract": "corpus:abstracts", "fulltext": "corpus:fulltexts"}
    assert d["same_doc_by"] == "source_id"
    assert set(d["lists"]) == {
        f"{g}@{lv}" for g in GRANULARITIES for lv in ("abstract", "fulltext")
    } - {"keyword@abstract"}  # keyword matching at the full-text level only (section 4.3.1)
    for name, rows in d["lists"].items():
        corpus = "abstracts" if name.endswith("@abstract") else "fulltexts"
        assert rows and len(rows) <= 4
        assert {r["doc_id"] for r in rows} <= doc_ids[corpus], name
    # The full-text level is chunk level: one full text gives several chunks of a list.
    full = d["lists"]["question@fulltext"]
    assert len({r["doc_id"] for r in full}) < len(full)
    # R_i counts the retrieved chunks of the same paper across both corpora.
    chunks_of: dict[str, set[str]] = {}
    for rows in d["lists"].values():
        for r in rows:
            chunks_of.setdefault(r["source_id"], set()).add(r["chunk_id"])
    for row in d["aggregated"]:
        assert row["same_doc"] == len(chunks_of[row["source_id"]])
    p1 = [r for r in d["aggregated"] if r["source_id"] == "P1"]
    p1_docs = {r["doc_id"] for r in p1}
    assert len(p1_docs) == 2 and p1_docs & doc_ids["abstracts"] and p1_docs & doc_ids["fulltexts"]
    assert {r["same_doc"] for r in p1} == {len(p1)} and len(p1) > 2
    assert {e.corpus for e in ans.evidence} <= {"abstracts", "fulltexts"}
    assert not ans.llm_used and ans.answer in QUESTION.options
    json.dumps(d)
    rt.close()


def test_proxy_unchanged_over_the_same_indexes(tmp_path, hash_embedder, two_indexes):
    paths, _ = two_indexes
    rt = make_runtime(tmp_path, hash_embedder)
    rt.index_paths = paths
    d = IPRAR(rt, k=4).answer_sync(QUESTION).model_dump()["details"]
    assert d["levels"] == {"abstract": "doc-level proxy", "fulltext": "chunk-level proxy"}
    assert d["same_doc_by"] == "doc_id"
    abstract = d["lists"]["question@abstract"]
    assert len({r["doc_id"] for r in abstract}) == len(abstract)  # doc level
    chunks_of: dict[str, set[str]] = {}
    for rows in d["lists"].values():
        for r in rows:
            chunks_of.setdefault(r["doc_id"], set()).add(r["chunk_id"])
    assert all(r["same_doc"] == len(chunks_of[r["doc_id"]]) for r in d["aggregated"])
    rt.close()


def test_one_level_switched_off(tmp_path, hash_embedder, two_indexes):
    paths, doc_ids = two_indexes
    rt = make_runtime(tmp_path, hash_embedder)
    rt.index_paths = paths
    d = (
        IPRAR(rt, k=3, use_abstract_level=False, **SPLIT)
        .answer_sync(QUESTION)
        .model_dump()["details"]
    )
    assert d["levels"] == {"fulltext": "corpus:fulltexts"}
    assert {n.split("@")[1] for n in d["lists"]} == {"fulltext"}
    assert {r["doc_id"] for rows in d["lists"].values() for r in rows} <= doc_ids["fulltexts"]
    rt.close()


def test_a_given_searcher_and_first_use_check(tmp_path, hash_embedder, two_indexes):
    paths, _ = two_indexes
    given = MultiSearcher([Searcher(p, hash_embedder) for p in paths])
    rt = make_runtime(tmp_path, hash_embedder, searcher=given)  # no index paths: first use
    d = IPRAR(rt, k=3, **SPLIT).answer_sync(QUESTION).model_dump()["details"]
    assert d["levels"]["abstract"] == "corpus:abstracts" and d["lists"]["question@abstract"]
    bad = IPRAR(rt, abstract_corpus="abstracts", fulltext_corpus="bodies")
    with pytest.raises(BioragError, match=r"fulltext_corpus 'bodies' is not among the indexes"):
        bad.answer_sync(QUESTION)
    rt.close()


def test_given_passages_ignore_the_corpora(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder)
    d = IPRAR(rt, **SPLIT).answer_sync(GIVEN).model_dump()["details"]
    assert d["levels"] == {
        "abstract": "given passages (doc level)",
        "fulltext": "given passages (chunk level)",
    }
    assert d["same_doc_by"] == "doc_id" and "searcher" not in rt.built()


@pytest.mark.parametrize(
    ("opts", "needle"),
    [
        ({"abstract_corpus": "abstracts"}, "abstract_corpus is set but fulltext_corpus is not"),
        ({"fulltext_corpus": "fulltexts"}, "fulltext_corpus is set but abstract_corpus is not"),
        ({"abstract_corpus": "x", "fulltext_corpus": "x"}, "both name 'x'"),
        ({"abstract_corpus": 3, "fulltext_corpus": "x"}, "must be an index name"),
        ({"abstract_corpus": "abstracts", "fulltext_corpus": ""}, "must be an index name"),
    ],
)
def test_bad_corpus_options(tmp_path, hash_embedder, opts, needle):
    with pytest.raises(BioragError, match=needle):
        IPRAR(make_runtime(tmp_path, hash_embedder), **opts)


def test_unknown_corpus_is_refused_at_construction(tmp_path, hash_embedder, two_indexes):
    paths, _ = two_indexes
    rt = make_runtime(tmp_path, hash_embedder)
    rt.index_paths = paths
    with pytest.raises(BioragError) as e:
        IPRAR(rt, abstract_corpus="abstract", fulltext_corpus="fulltexts")
    assert "abstract_corpus 'abstract'" in str(e.value)
    assert "'abstracts', 'fulltexts'" in str(e.value)
    assert "searcher" not in rt.built()  # the manifests were read, nothing opened


@pytest.mark.slow
def test_cli_two_indexes_from_one_papers_file(tmp_path, monkeypatch):
    monkeypatch.setenv("BIORAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BIORAG_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)
    from biorag.cli.main import app

    runner = CliRunner()

    def run(*args: str):
        res = runner.invoke(app, list(args), catch_exceptions=False)
        assert res.exit_code == 0, res.stderr
        return json.loads(res.stdout)

    papers = str(write_papers(tmp_path / "papers.jsonl"))
    built = run(
        "index", "build", "--corpus", papers, "--format", "paper-abstracts",
        "--out", "idx/abstracts", "--json",
    )  # fmt: skip
    assert built["documents_total"] == 4 and built["skipped"] == 0
    built = run(
        "index", "build", "--corpus", papers, "--format", "paper-fulltexts",
        "--out", "idx/bodies", "--name", "fulltexts", "--json",
    )  # fmt: skip
    assert built["documents_total"] == 3  # P4 has no full text: not a skipped record
    assert built["skipped"] == 0 and built["papers_without_fulltext"] == 1
    ans = run(
        "ask", "--index", "idx/abstracts", "--index", "idx/bodies", "--method", "iprar",
        "--method-options", json.dumps(SPLIT),
        "--options", json.dumps(QUESTION.options), "--json", QUESTION.text,
    )  # fmt: skip
    assert ans["answer"] in QUESTION.options and ans["evidence"]
    d = ans["details"]  # the JSON /v1/ask returns: the method's trace under details
    assert d["levels"] == {"abstract": "corpus:abstracts", "fulltext": "corpus:fulltexts"}
    assert d["same_doc_by"] == "source_id"
    assert all(d["lists"].values())
    from biorag.corpus.store import CorpusStore

    for folder, level in (("abstracts", "abstract"), ("bodies", "fulltext")):
        store = CorpusStore(tmp_path / "idx" / folder / "corpus.sqlite")
        ids = {doc.id for doc in store.iter_documents()}
        store.close()
        rows = [r for n, rs in d["lists"].items() if n.endswith(f"@{level}") for r in rs]
        assert {r["doc_id"] for r in rows} <= ids, level
    corpus_of = {e["chunk_id"]: e["corpus"] for e in ans["evidence"]}
    assert set(corpus_of.values()) <= {"abstracts", "fulltexts"}
    assert {e["source_id"] for e in ans["evidence"]} <= {"P1", "P2", "P3", "P4"}
    # A wrong corpus name is a one-line error naming the indexes.
    res = runner.invoke(
        app,
        [
            "ask", "--index", "idx/abstracts", "--index", "idx/bodies", "--method", "iprar",
            "--method-options", '{"abstract_corpus": "abstracts", "fulltext_corpus": "bodies"}',
            QUESTION.text,
        ],
    )  # fmt: skip
    assert res.exit_code == 2 and "'bodies' is not among the indexes" in res.stderr
    assert "Traceback" not in res.stderr
