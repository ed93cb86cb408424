"""The retrieval settings of the ablation (abbreviations, RM3, doc_score, second_encoder) on
small indexes: each changes what is found the way it should, the index records the settings it
was built with, and a bad setting is one line naming it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import HashEmbedder

from biorag.config import RetrievalSettings
from biorag.corpus.models import Document
from biorag.errors import BioragError
from biorag.retrieve import abbreviations as abbr
from biorag.retrieve.index import IndexDir, index_stats, read_manifest
from biorag.retrieve.prf import rm3_weights
from biorag.retrieve.search import Searcher

DOCS = [
    ("defines", "Serum C-reactive protein (CRP) was measured in 40 children with fever."),
    ("long", "C-reactive protein rises within hours of acute appendicitis in adults."),
    ("other", "Leukocyte counts were normal in most patients with gastroenteritis."),
    ("far", "Statins lower LDL cholesterol and cardiovascular events."),
]


def _index(path: Path, emb: object, docs: list[tuple[str, str]] = DOCS, **kw: object) -> Path:
    idx = IndexDir(path, emb, name="t", retrieval=RetrievalSettings(**kw))  # type: ignore[arg-type]
    idx.add([Document.create(source_id=s, text=t) for s, t in docs])
    idx.close()
    return path


def _ids(s: Searcher, q: str, retriever: str = "bm25", k: int = 4) -> list[str]:
    return [p.source_id for p in s.search([q], k=k, retriever=retriever, level="doc")[0]]


# -- abbreviations ---------------------------------------------------------------------------
def test_schwartz_hearst_pairs_and_what_is_not_an_abbreviation() -> None:
    text = (
        "Heat shock protein 90 (HSP90) binds. White blood cell count (WBC) fell (n = 12; "
        "p < 0.05) in 40% (95%) of the patients (see below)."
    )
    assert abbr.pairs_in(text) == [
        ("HSP90", "heat shock protein 90"),
        ("WBC", "white blood cell count"),
    ]
    # the short form's first letter must start a word of the long form
    assert abbr.best_long_form("CRP", "serum c-reactive protein") == "c-reactive protein"
    assert abbr.best_long_form("XYZ", "nothing like it") is None


def test_expansion_finds_a_document_that_only_spells_it_out(tmp_path: Path) -> None:
    emb = HashEmbedder()
    path = _index(tmp_path / "i", emb)
    plain = Searcher(path, emb)
    assert _ids(plain, "CRP") == ["defines"]
    s = Searcher(path, emb, RetrievalSettings(abbreviations="corpus"))
    assert s.expand.pairs == {"CRP": "c-reactive protein"}
    assert s.expand.expand("CRP in appendicitis") == "CRP in appendicitis c-reactive protein"
    assert s.expand.expand("c-reactive protein levels") == "c-reactive protein levels CRP"
    assert _ids(s, "CRP") == ["defines", "long"]
    cache = json.loads((path / abbr.CACHE).read_text())
    assert cache["pairs"] == {"CRP": "c-reactive protein"}
    # an add changes the chunks: the pairs are mined again and the new one is there
    idx = IndexDir(path, emb)
    idx.add([Document.create(source_id="new", text="Body mass index (BMI) was recorded.")])
    idx.close()
    again = Searcher(path, emb, RetrievalSettings(abbreviations="corpus"))
    assert again.expand.pairs["BMI"] == "body mass index"


def test_a_pairs_file_json_or_tsv(tmp_path: Path) -> None:
    emb = HashEmbedder()
    path = _index(tmp_path / "i", emb)
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("# short\tlong\nCRP\tC-reactive protein\n")
    s = Searcher(path, emb, RetrievalSettings(abbreviations=str(tsv)))
    assert _ids(s, "CRP") == ["defines", "long"]
    js = tmp_path / "pairs.json"
    js.write_text(json.dumps({"LDL": "low-density lipoprotein"}))
    assert abbr.load_pairs(js) == {"LDL": "low-density lipoprotein"}


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"CRP": ', "is not valid JSON"),
        ('{"CRP": ""}', "gives 'CRP' no long form"),
        ("CRP C-reactive protein\n", "line 1 is not short<TAB>long"),
        (None, "is not a file"),
    ],
)
def test_a_pairs_file_that_does_not_parse_is_one_line(
    tmp_path: Path, content: str | None, says: str
) -> None:
    f = tmp_path / "pairs.txt"
    if content is not None:
        f.write_text(content)
    with pytest.raises(BioragError) as e:
        path = _index(tmp_path / "i", HashEmbedder())
        Searcher(path, None, RetrievalSettings(abbreviations=str(f)))
    msg = str(e.value)
    assert msg.startswith("retrieval.abbreviations:") and says in msg and "\n" not in msg


# -- RM3 -------------------------------------------------------------------------------------
def test_rm3_weights_mix_the_query_with_the_feedback_terms() -> None:
    w = rm3_weights(["crp"], [(["crp", "append"], 2.0), (["crp", "fever"], 1.0)], terms=2, orig=0.5)
    # P(d|q) = 2/3, 1/3; P(crp|R) = 1/2, P(append|R) = 1/3, P(fever|R) = 1/6: fever is cut
    assert w["crp"] == pytest.approx(0.5 + 0.5 * 0.5 / (0.5 + 1 / 3))
    assert set(w) == {"crp", "append"} and sum(w.values()) == pytest.approx(1.0)
    assert rm3_weights(["a"], [], 5, 0.5) == {"a": 1.0}


def test_rm3_reaches_a_document_that_shares_no_query_term(tmp_path: Path) -> None:
    docs = [
        ("top", "Appendicitis raises leukocyte counts and neutrophil percentage."),
        ("top2", "Appendicitis with leukocyte elevation and neutrophil shift in children."),
        ("hidden", "Leukocyte and neutrophil counts in abdominal pain."),
        ("far", "Statins lower LDL cholesterol."),
    ]
    emb = HashEmbedder()
    path = _index(tmp_path / "i", emb, docs)
    assert "hidden" not in _ids(Searcher(path, emb), "appendicitis")
    st = RetrievalSettings(prf="rm3", prf_docs=2, prf_terms=5)
    assert "hidden" in _ids(Searcher(path, emb, st), "appendicitis")


# -- document score --------------------------------------------------------------------------
def test_doc_score_sum_lets_many_good_chunks_beat_one_best(tmp_path: Path) -> None:
    one = "Aspirin aspirin bleeding."
    many = "Aspirin dosing. Aspirin timing. Aspirin in the elderly."
    a = Document.create(source_id="one", text=one)
    b = Document.create(source_id="many", text=many)
    b = b.model_copy(update={"spans": [(0, 15), (16, 30), (31, len(many))]})
    emb = HashEmbedder()
    idx = IndexDir(tmp_path / "i", emb, name="t")
    idx.add([a, b])
    idx.close()
    assert _ids(Searcher(tmp_path / "i", emb), "aspirin")[0] == "one"
    s = Searcher(tmp_path / "i", emb, RetrievalSettings(doc_score="sum"))
    top = s.search(["aspirin"], k=2, retriever="bm25", level="doc")[0]
    assert [p.source_id for p in top] == ["many", "one"] and top[0].score > top[1].score
    top2 = Searcher(tmp_path / "i", emb, RetrievalSettings(doc_score="top2"))
    assert _ids(top2, "aspirin", k=2) == ["many", "one"]


# -- a second encoder ------------------------------------------------------------------------
class VowelEmbedder(HashEmbedder):
    """Another encoder: only the words that start with a vowel count."""

    model_id = "test:vowels-64"

    def embed(self, texts, *, batch_size=None, show_progress=False):
        keep = [" ".join(w for w in t.split() if w[:1].lower() in "aeiou") or "x" for t in texts]
        return super().embed(keep)


def test_a_second_encoder_is_built_beside_the_index_fused_and_rebuilt_after_an_add(
    tmp_path: Path,
) -> None:
    emb, second = HashEmbedder(), VowelEmbedder()
    path = _index(tmp_path / "i", emb)
    st = RetrievalSettings(second_encoder="vowels", second_weight=0.5)
    s = Searcher(path, emb, st, second_embedder=second)
    top = s.search(["acute appendicitis"], k=2, retriever="hybrid", level="doc")[0]
    assert top[0].source_id == "long"
    folder = path / "second_dense" / "test_vowels-64"
    assert (folder / "built_from.json").is_file() and second.calls == [len(DOCS), 1]
    # dense alone fuses the two encoders
    alone = s.search(["acute appendicitis"], k=4, retriever="dense", level="doc")[0]
    assert alone[0].source_id == "long"
    # reopened, nothing is embedded again; after an add it is built again
    Searcher(path, emb, st, second_embedder=second).search(["acute"], k=1, level="doc")
    assert second.calls == [len(DOCS), 1, 1, 1]  # queries only (the dense search above too)
    idx = IndexDir(path, emb)
    idx.add([Document.create(source_id="new", text="An elderly onset of arthritis.")])
    idx.close()
    s2 = Searcher(path, emb, st, second_embedder=second)
    got = s2.search(["elderly onset arthritis"], k=1, retriever="dense", level="doc")[0]
    assert got[0].source_id == "new"
    assert np.isfinite(got[0].score)


# -- what the index records -----------------------------------------------------------------
def test_the_index_records_its_settings_and_a_search_with_others_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    emb = HashEmbedder()
    path = _index(tmp_path / "i", emb, bm25_k1=1.2)
    built = read_manifest(path)["retrieval"]
    assert built["bm25_k1"] == 1.2 and built["prf"] == "none" and "k" not in built
    assert index_stats(path)["retrieval"] == built
    with caplog.at_level(logging.WARNING, logger="biorag.retrieve.search"):
        Searcher(path, emb, RetrievalSettings(bm25_k1=1.2))
        assert not caplog.records
        Searcher(path, emb, RetrievalSettings(bm25_k1=1.2, prf="rm3", k=3))
    (rec,) = caplog.records
    assert "retrieval.prf='rm3' (built with 'none')" in rec.getMessage()
    assert "bm25_k1" not in rec.getMessage() and "retrieval.k=" not in rec.getMessage()


def test_an_unknown_fusion_is_a_line_naming_the_setting_and_its_choices(tmp_path: Path) -> None:
    from biorag.config import load_settings

    (tmp_path / "biorag.toml").write_text('[retrieval]\nfusion = "borda"\n')
    with pytest.raises(BioragError) as e:
        load_settings(tmp_path / "biorag.toml")
    (line,) = [ln for ln in str(e.value).splitlines() if "retrieval.fusion" in ln]
    assert "'score' or 'rrf'" in line
