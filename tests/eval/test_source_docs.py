"""A question's own source document never reaches its context in the open setting: the searcher
leaves it out (searching deeper so k others remain), every retrieving method obeys the ask's
exclusion, and the eval counts and reports what was left out."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from biorag.config import ChunkingSettings, Settings
from biorag.corpus.datasets.base import QAItem
from biorag.corpus.loaders import load_corpus
from biorag.errors import BioragError
from biorag.eval.report.writer import write_report
from biorag.eval.run.records import read_predictions
from biorag.eval.run.runner import run_eval
from biorag.eval.run.source_docs import exclusion_for, policy_effect, source_documents
from biorag.retrieve.exclusion import DocExclusion
from biorag.retrieve.index import IndexDir
from biorag.retrieve.search import MultiSearcher, Searcher
from biorag.runtime import Runtime

OPTIONS = {"A": "yes", "B": "no", "C": "maybe"}
TOPICS = [
    ("zelocitinib", "liver fibrosis", "hepatocytes"),
    ("quobrutinib", "kidney scarring", "podocytes"),
    ("varexalimab", "lung inflammation", "alveoli"),
]
# every retrieving method (vectorgraphrag reads a knowledge graph, not the index)
RETRIEVING = ["retrieve-read", "rewrite", "hyde", "raptor", "claim", "claims", "crag", "selfrag",
              "iprar"]  # fmt: skip


def _docs() -> list[dict]:
    """Per topic: the question's own abstract (id = its PMID; it repeats the question's words,
    so it ranks first) and two others about the topic."""
    docs = []
    for i, (drug, disease, cells) in enumerate(TOPICS):
        docs.append({"id": f"9000{i}", "text": (
            f"Does {drug} reduce {disease}? We tested whether {drug} reduces {disease} in "
            f"{cells}. In conclusion {drug} reduces {disease} in {cells}: yes."
        )})  # fmt: skip
        docs.append({"id": f"8000{i}", "text": f"{drug.title()} acts on {cells}. It was well "
                     "tolerated in a phase 1 trial of adults."})  # fmt: skip
        docs.append({"id": f"7000{i}", "text": f"The burden of {disease} is rising. Treatments "
                     f"for {disease} are few."})  # fmt: skip
    return docs


def _items() -> list[QAItem]:
    return [
        QAItem(id=f"9000{i}", dataset="pubmedqa", question=f"Does {drug} reduce {disease}?",
               options=OPTIONS, gold="A", question_type="yesno", gold_docs=[f"9000{i}"])
        for i, (drug, disease, _) in enumerate(TOPICS)
    ]  # fmt: skip


def _index(tmp_path: Path, emb, docs: list[dict], chunking: ChunkingSettings | None = None):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    idx = IndexDir(tmp_path / "idx", emb, chunking=chunking, name="pubmed")
    idx.add(load_corpus(path))
    idx.close()
    return tmp_path / "idx"


def test_searcher_leaves_excluded_documents_out_and_counts_them(tmp_path, hash_embedder):
    searcher = Searcher(_index(tmp_path, hash_embedder, _docs()), hash_embedder)
    query = ["Does zelocitinib reduce liver fibrosis?"]
    for retriever in ("bm25", "dense", "hybrid"):
        plain = searcher.search(query, 3, retriever)[0]
        assert plain[0].source_id == "90000"  # the own abstract ranks first
        ex = DocExclusion.of(["90000"])
        kept = searcher.search(query, 3, retriever, exclude=ex)[0]
        assert len(kept) == 3 and "90000" not in {p.source_id for p in kept}
        assert [p.rank for p in kept] == [1, 2, 3]
        assert ex.hits == 1 and ex.found == {"90000"} and ex.searches == 1
        counted = DocExclusion.of(["90000"], drop=False)  # count only: the allow policy
        assert searcher.search(query, 3, retriever, exclude=counted)[0] == plain
        assert counted.hits == 1
        # a document's content id names it too
        by_id = DocExclusion.of([plain[0].doc_id])
        found = searcher.search(query, 3, retriever, exclude=by_id)[0]
        assert plain[0].doc_id not in {p.doc_id for p in found}
    searcher.close()


def test_search_goes_deeper_when_the_excluded_document_fills_the_ranking(tmp_path, hash_embedder):
    """The own document in ~80 small chunks that all outrank the rest: the first ranking (50
    deep) is all of it; the searcher searches deeper until k other chunks are found."""
    own = " ".join(f"Zelocitinib reduces liver fibrosis in study {n}." for n in range(80))
    docs = [{"id": "90000", "text": own}]
    docs += [{"id": f"1{n:03d}", "text": f"Fibrosis was measured in cohort {n}."}
             for n in range(5)]  # fmt: skip
    path = _index(tmp_path, hash_embedder, docs, ChunkingSettings(chunk_tokens=16,
                                                                  overlap_tokens=0))  # fmt: skip
    searcher = Searcher(path, hash_embedder)
    (own_doc,) = searcher.store.resolve_document_ids("90000")
    n_own = list(searcher.store.chunk_doc_ids().values()).count(own_doc)
    query = ["zelocitinib reduces liver fibrosis study"]
    assert {p.source_id for p in searcher.search(query, 3, "bm25")[0]} == {"90000"}
    ex = DocExclusion.of(["90000"])
    kept = searcher.search(query, 3, "bm25", exclude=ex)[0]
    assert len(kept) == 3 and all(p.source_id.startswith("1") for p in kept)
    assert n_own > 50 and ex.hits == n_own  # every chunk of it, met once, in the final search
    searcher.close()


def test_the_runtime_of_an_ask_filters_every_search_it_makes(tmp_path, hash_embedder):
    from biorag.llm.accounting import Accounting

    path = _index(tmp_path, hash_embedder, _docs())
    rt = Runtime(Settings.model_validate({"home": str(tmp_path / "h")}), [path],
                 embedder=hash_embedder)  # fmt: skip
    ex = DocExclusion.of(["90000"])
    child = rt.for_question(Accounting(), ex)
    q = ["Does zelocitinib reduce liver fibrosis?"]
    assert rt.searcher.search(q, 2)[0][0].source_id == "90000"  # the run's own searcher: all
    assert "90000" not in {p.source_id for p in child.searcher.search(q, 2)[0]}
    (one,) = child.searcher.select(None)  # a corpus picked out obeys too
    assert "90000" not in {p.source_id for p in one.search(q, 2)[0]}
    assert child.searcher.names == ["pubmed"] and isinstance(rt.searcher, MultiSearcher)
    assert ex.hits == 2
    rt.close()


def test_which_documents_a_question_owns_by_dataset():
    pubmedqa, *_ = _items()
    assert source_documents(pubmedqa) == ["90000"]
    mirage = QAItem(id="pubmedqa/123", dataset="mirage", subset="pubmedqa", question="q?",
                    options=OPTIONS, gold="A", gold_docs=["123"])  # fmt: skip
    assert source_documents(mirage) == ["123"]
    bioasq = QAItem(id="b1", dataset="bioasq", question="q?", gold="yes",
                    question_type="yesno", gold_docs=["11", "12"])  # fmt: skip
    # BioASQ's gold documents are its retrieval target: kept unless exclude-gold
    assert source_documents(bioasq) == [] and exclusion_for(bioasq, "exclude") is None
    gold = exclusion_for(bioasq, "exclude-gold")
    assert gold is not None and gold.ids == {"11", "12"} and gold.drop
    allow = exclusion_for(pubmedqa, "allow")
    assert allow is not None and not allow.drop and allow.ids == {"90000"}


def _loader(items):
    def load(name, path, *, split=None, setting=None, limit=None):
        return SimpleNamespace(items=items, skipped=[], info={})

    return load


def _run(tmp_path, hash_embedder, index, out, methods, items=None, dataset="pubmedqa", **kw):
    settings = Settings.model_validate({
        "home": str(tmp_path / "home"),
        "llm": {"backend": "mock", "mock_script": "dry-run", "cache": False},
    })  # fmt: skip
    rt = Runtime(settings, [index], embedder=hash_embedder)
    data = tmp_path / "data.jsonl"
    data.write_text("x\n")
    try:
        return run_eval(settings, dataset, data, methods=methods, index_paths=[index],
                        out_dir=out, loader=_loader(items or _items()), runtime=rt,
                        concurrency=2, **kw)  # fmt: skip
    finally:
        rt.close()


def test_no_retrieving_method_sees_the_questions_own_abstract(tmp_path, hash_embedder):
    index = _index(tmp_path, hash_embedder, _docs())
    out = tmp_path / "run"
    s = _run(tmp_path, hash_embedder, index, out, RETRIEVING)
    recs = read_predictions(out / "predictions.jsonl")
    assert len(recs) == len(RETRIEVING) * 3
    assert not [r["error"] for r in recs if r["error"]]
    conclusion = {f"9000{i}": f"In conclusion {t[0]}" for i, t in enumerate(TOPICS)}
    for r in recs:
        assert r["question_id"] not in r["documents"], (r["method"], r["documents"])
        assert conclusion[r["question_id"]] not in r["context"], r["method"]
        assert r["source_docs"]["ids"] == [r["question_id"]] and r["source_docs"]["dropped"]
    for r in recs:  # the answer says what its context lost
        said = any("of excluded documents" in n for n in r["notes"])
        assert said == bool(r["source_docs"]["hits"]), r["method"]
    hit = {r["method"] for r in recs if r["source_docs"]["hits"]}
    assert hit == set(RETRIEVING)  # every one of them searched, and met the abstract
    block = s.metrics["source_exclusion"]
    assert block["policy"] == "exclude" and block["questions_with_documents"] == 3
    assert block["questions_hit"] == 3
    assert block["hits"] == sum(r["source_docs"]["hits"] for r in recs) > 0
    assert block["per_method"]["retrieve-read"]["answers_with_hits"] == 3
    report = write_report(out).read_text()
    assert f"{block['hits']} retrieved hits removed, in 3 of 3 questions" in report
    assert json.loads((out / "run.json").read_text())["source_docs"] == "exclude"


def test_allow_keeps_the_own_abstract_and_says_so(tmp_path, hash_embedder):
    index = _index(tmp_path, hash_embedder, _docs())
    out = tmp_path / "run"
    s = _run(tmp_path, hash_embedder, index, out, ["retrieve-read", "claims"],
             source_docs="allow")  # fmt: skip
    recs = read_predictions(out / "predictions.jsonl")
    rr = [r for r in recs if r["method"] == "retrieve-read"]
    assert all(r["question_id"] in r["documents"] for r in rr)
    own = {f"9000{i}": f"In conclusion {t[0]}" for i, t in enumerate(TOPICS)}
    assert all(own[r["question_id"]] in r["context"] for r in rr)
    block = s.metrics["source_exclusion"]
    assert block["policy"] == "allow" and block["questions_hit"] == 3
    assert "3 of 3 questions retrieved their own source document" in block["note"]
    # a resume under another policy would mix the two: refused
    with pytest.raises(BioragError, match=r"source_docs: 'allow' in run\.json, now 'exclude'"):
        _run(tmp_path, hash_embedder, index, out, ["retrieve-read", "claims"])


def test_an_unknown_policy_is_one_line(tmp_path, hash_embedder):
    index = _index(tmp_path, hash_embedder, _docs())
    with pytest.raises(BioragError, match="source-docs policy must be one of exclude"):
        _run(tmp_path, hash_embedder, index, tmp_path / "r", ["retrieve-read"], source_docs="no")


def _bioasq_items() -> list[QAItem]:
    """BioASQ-like questions: gold documents (the retrieval target), none a source of theirs."""
    return [
        QAItem(id=f"b{i}", dataset="bioasq", question=f"Does {drug} reduce {disease}?",
               options={"A": "yes", "B": "no"}, gold="A", question_type="yesno",
               gold_docs=[f"8000{i}"])
        for i, (drug, disease, _) in enumerate(TOPICS)
    ]  # fmt: skip


def _forget_policy(out: Path) -> None:
    """run.json as biorag wrote it before it recorded a source-docs policy."""
    cfg = json.loads((out / "run.json").read_text())
    del cfg["source_docs"]
    (out / "run.json").write_text(json.dumps(cfg))


def test_a_run_from_before_the_policy_resumes_where_exclude_removes_nothing(
    tmp_path, hash_embedder
):
    """An old run.json (no source_docs, an index) read as allow: where no question has a
    source document of its own, the default exclude does the same and the run resumes; where
    one has (PubMedQA), it does not; exclude-gold, leaving BioASQ's gold out, is refused."""
    index = _index(tmp_path, hash_embedder, _docs())
    out = tmp_path / "bioasq"
    bioasq = {"items": _bioasq_items(), "dataset": "bioasq"}
    _run(tmp_path, hash_embedder, index, out, ["retrieve-read"], **bioasq)
    assert json.loads((out / "run.json").read_text())["source_docs"] is None  # nothing changed
    _forget_policy(out)
    s = _run(tmp_path, hash_embedder, index, out, ["retrieve-read"], **bioasq)
    assert s.already_done == 3 and s.answered_now == 0
    _run(tmp_path, hash_embedder, index, out, ["retrieve-read"], source_docs="allow", **bioasq)
    with pytest.raises(BioragError, match=r"source_docs: None in run\.json, now 'exclude-gold'"):
        _run(tmp_path, hash_embedder, index, out, ["retrieve-read"], source_docs="exclude-gold",
             **bioasq)  # fmt: skip
    # a run.json written with exclude before None was recorded for it resumes too
    cfg = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**cfg, "source_docs": "exclude"}))
    _run(tmp_path, hash_embedder, index, out, ["retrieve-read"], **bioasq)

    pubmed = tmp_path / "pubmedqa"
    _run(tmp_path, hash_embedder, index, pubmed, ["retrieve-read"], source_docs="allow")
    _forget_policy(pubmed)
    with pytest.raises(BioragError, match=r"source_docs: 'allow' in run\.json, now 'exclude'"):
        _run(tmp_path, hash_embedder, index, pubmed, ["retrieve-read"])


def test_exclude_and_exclude_gold_are_one_where_they_leave_out_the_same_ids(
    tmp_path, hash_embedder
):
    """PubMedQA's gold document is its source: exclude-gold removes what exclude does, and a
    run resumes under either; BioASQ's are not, and the two differ."""
    index = _index(tmp_path, hash_embedder, _docs())
    out = tmp_path / "run"
    _run(tmp_path, hash_embedder, index, out, ["retrieve-read"])
    s = _run(tmp_path, hash_embedder, index, out, ["retrieve-read"], source_docs="exclude-gold")
    assert s.already_done == 3 and s.metrics["source_exclusion"]["policy"] == "exclude-gold"
    assert json.loads((out / "run.json").read_text())["source_docs"] == "exclude-gold"
    _run(tmp_path, hash_embedder, index, out, ["retrieve-read"])
    assert policy_effect("exclude-gold", _items()) == "exclude"
    assert policy_effect("exclude-gold", _bioasq_items()) == "exclude-gold"
    assert policy_effect("exclude", _bioasq_items()) is None
    assert policy_effect("allow", _bioasq_items()) is None
    assert policy_effect("allow", _items()) == "allow"
