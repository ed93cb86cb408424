"""The whole CLAIMS pipeline offline: no-LLM operators, and the dry-run model in both modes."""

from __future__ import annotations

import json

import pytest

from biorag.config import Settings
from biorag.corpus.store import CorpusStore
from biorag.errors import BioragError
from biorag.methods.base import Question
from biorag.methods.claims import Claims
from biorag.runtime import Runtime

# Three documents whose answer needs two hops: drug X -> enzyme Y -> disease Z.
CHAIN = [
    {
        "id": "p1",
        "text": "Zelocitinib inhibits the enzyme KRX1 in hepatocytes. "
        "Zelocitinib was well tolerated in a phase 1 trial.",
    },
    {
        "id": "p2",
        "text": "The enzyme KRX1 drives fibrosis of the liver. "
        "KRX1 expression is increased in cirrhosis.",
    },
    {
        "id": "p3",
        "text": "Liver fibrosis causes portal hypertension in adults. "
        "Portal hypertension increases the risk of variceal bleeding.",
    },
]
QUESTION = Question(
    id="q1",
    text="Could zelocitinib reduce fibrosis of the liver?",
    options={"A": "yes", "B": "no", "C": "maybe"},
)


@pytest.fixture
def chain_index(index_of):
    return index_of(CHAIN, "chain")


def runtime(tmp_path, index, emb, llm: dict | None = None) -> Runtime:
    data = {"home": str(tmp_path / "home")}
    if llm:
        data["llm"] = llm
    return Runtime(Settings.model_validate(data), [index], embedder=emb)


def check_contract(ans, index) -> None:
    d = ans.model_dump()["details"]
    claim_ids = {c["id"] for c in d["claims"]}
    assert d["claims"] and d["summaries"] and d["claims_of_interest"]
    for s in d["summaries"]:
        assert set(s["claim_ids"]) <= claim_ids and s["root_claim_id"] in s["claim_ids"]
    for c in d["claims"]:
        assert c["triple"] and c["triple_source"]
    store = CorpusStore(index / "corpus.sqlite")
    docs = store.get_documents(sorted({c["doc_id"] for c in d["claims"]}))
    assert len(docs) == len({c["doc_id"] for c in d["claims"]})
    chunks = store.get_chunks(sorted({c["chunk_id"] for c in d["claims"]}))
    assert len(chunks) == len({c["chunk_id"] for c in d["claims"]})
    store.close()
    g = d["graph"]
    assert {"nodes", "edges", "components", "merged_entities", "layer_sizes"} <= set(g)
    assert ans.context and ans.answer in QUESTION.options


def test_no_llm_pipeline_reaches_the_second_hop(tmp_path, chain_index, hash_embedder):
    rt = runtime(tmp_path, chain_index, hash_embedder)
    # the toy embedder's cosines are no relevance (0.25 for the first hop's claim): the paper's
    # summaries, without the threshold; the default's, with MiniLM, in the next test
    method = Claims(rt, per_corpus_k=3, summary_min_relevance=None)
    ans = method.answer_sync(QUESTION)
    check_contract(ans, chain_index)
    assert not ans.llm_used and "floor" in ans.notes[0]
    # The layerwise context links zelocitinib -> KRX1 -> fibrosis: both hops are in it.
    assert "inhibits the enzyme KRX1" in ans.context
    assert "drives fibrosis" in ans.context
    rt.close()


def test_the_default_relevance_threshold_keeps_both_hops_with_minilm(tmp_path):
    from biorag.corpus.loaders import load_corpus
    from biorag.embed.st_embedder import SentenceTransformerEmbedder
    from biorag.retrieve.index import IndexDir

    emb = SentenceTransformerEmbedder()
    docs = tmp_path / "chain.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in CHAIN))
    index = tmp_path / "idx"
    with IndexDir(index, emb, name="chain") as idx:
        idx.add(load_corpus(docs))
    rt = runtime(tmp_path, index, emb)
    ans = Claims(rt, per_corpus_k=3).answer_sync(QUESTION)
    assert "inhibits the enzyme KRX1" in ans.context and "drives fibrosis" in ans.context
    relevance = {c.text: c.relevance for c in ans.details.claims}
    assert min(relevance.values()) < 0.4 < relevance["Zelocitinib inhibits the enzyme KRX1 in "
                                                    "hepatocytes."]  # fmt: skip
    rt.close()


@pytest.mark.parametrize("mode", ["faithful", "batched"])
def test_dry_run_llm_pipeline_both_modes(tmp_path, chain_index, hash_embedder, mode, reader_spy):
    settings = Settings.model_validate({"home": str(tmp_path / "home")})
    rt = Runtime(settings, [chain_index], embedder=hash_embedder, llm=reader_spy.client(settings))
    ans = Claims(rt, mode=mode, denoise="drop").answer_sync(QUESTION)
    check_contract(ans, chain_index)
    assert ans.llm_used and ans.answer == "C" and not ans.parse_failed
    # the reader read the layerwise summaries, every one of them
    assert ans.context and all(
        reader_spy.read(s["text"]) for s in ans.model_dump()["details"]["summaries"]
    )
    stages = rt.accounting()["stages"]
    if mode == "faithful":
        assert stages["claims"]["calls"] == 3 and stages["triples"]["calls"] >= 4
        assert "claims_triples" not in stages
    else:
        assert stages["claims_triples"]["calls"] == 3 and "triples" not in stages
        assert stages["denoise"]["calls"] == 1
    rt.close()


def test_batched_uses_fewer_calls_than_faithful(tmp_path, chain_index, hash_embedder):
    llm = {"backend": "mock", "mock_script": "dry-run", "cache": False}
    calls = {}
    for mode in ("faithful", "batched"):
        rt = runtime(tmp_path, chain_index, hash_embedder, llm)
        Claims(rt, mode=mode, denoise="drop").answer_sync(QUESTION)
        calls[mode] = rt.accounting()["total"]["calls"]
        rt.close()
    assert calls["batched"] < calls["faithful"]


def test_graph_exports(tmp_path, chain_index, hash_embedder):
    from biorag.cli.ask_cmd import export_graph

    rt = runtime(tmp_path, chain_index, hash_embedder)
    ans = Claims(rt).answer_sync(QUESTION)
    export_graph(ans.trace, tmp_path / "g.html", tmp_path / "g.graphml")
    page = (tmp_path / "g.html").read_text()
    assert all(c["id"] in page for c in ans.model_dump()["details"]["claims"])
    assert "http://" not in page and "https://" not in page
    assert (tmp_path / "g.graphml").read_text().startswith("<?xml")
    rt.close()


def test_bad_options_are_clear_errors(tmp_path, chain_index, hash_embedder):
    rt = runtime(tmp_path, chain_index, hash_embedder)
    with pytest.raises(BioragError, match="unknown CLAIMS option"):
        Claims(rt, modee="batched")
    with pytest.raises(BioragError, match="mode must be one of"):
        Claims(rt, mode="fast")


class _LogitReranker:
    """A cross-encoder's scale: every claim scores 100, far above any cosine threshold."""

    def score(self, query, texts):
        import numpy as np

        return np.full(len(texts), 100.0)


def test_summary_relevance_is_the_embedders_cosine_whatever_the_reranker(
    tmp_path, chain_index, hash_embedder
):
    from biorag.embed.rerank import BiEncoderReranker

    settings = Settings.model_validate({"home": str(tmp_path / "home")})
    rt = Runtime(settings, [chain_index], embedder=hash_embedder, reranker=_LogitReranker())
    ans = Claims(rt, per_corpus_k=3).answer_sync(QUESTION)
    claims = ans.details.claims
    cosine = BiEncoderReranker(hash_embedder).score(QUESTION.text, [c.text for c in claims])
    for c, r in zip(claims, cosine, strict=True):
        assert c.score == 100.0 and c.relevance == pytest.approx(float(r), abs=1e-6)
    low = {c.id for c in claims if c.relevance < 0.4}
    assert low, "the test needs a claim below the default threshold"
    roots = {s.root_claim_id for s in ans.details.summaries}
    summarized = {cid for s in ans.details.summaries for cid in s.claim_ids}
    # read on the reranker's 100s every claim would pass; on the cosine, the low ones stay out
    # (the best claim of interest always stays)
    assert not (summarized - roots) & low and len(roots & low) <= 1
    rt.close()
