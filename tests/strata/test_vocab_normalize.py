from __future__ import annotations

import pytest

from biorag.errors import InputFormatError
from biorag.strata.normalize import Normalizer
from biorag.strata.vocab import parse_mesh_xml, parse_uniprot_tsv


def test_mesh_parsing_types_and_synonyms(vocab_files):
    entries = {e.id: e for e in parse_mesh_xml(vocab_files[0])}
    assert "MESH:D005260" not in entries  # G branch: skipped
    t2d = entries["MESH:D003924"]
    assert t2d.type == "Disease" and t2d.name == "Diabetes Mellitus, Type 2"
    assert set(t2d.synonyms) == {"Type 2 Diabetes", "T2D"}
    assert entries["MESH:D008687"].type == "Drug"


def test_uniprot_parsing(vocab_files):
    entries = {e.id: e for e in parse_uniprot_tsv(vocab_files[1])}
    erbb2 = entries["UNIPROT:P04626"]
    assert erbb2.type == "Protein" and erbb2.name == "Receptor tyrosine-protein kinase erbB-2"
    assert "Proto-oncogene Neu" in erbb2.synonyms and "HER2" in erbb2.synonyms
    gene = entries["GENE:ERBB2"]
    assert gene.type == "Gene" and "HER2" in gene.synonyms


def test_wrong_files_raise(tmp_path, vocab_files):
    bad = tmp_path / "bad.xml"
    bad.write_text("<foo/>")
    with pytest.raises(InputFormatError, match="DescriptorRecordSet"):
        parse_mesh_xml(bad)
    with pytest.raises(InputFormatError):
        parse_mesh_xml(vocab_files[1])  # a TSV is no XML
    with pytest.raises(InputFormatError, match="Gene Names"):
        parse_uniprot_tsv(vocab_files[0])


def test_exact_and_synonym_match(vocab, emb):
    n = Normalizer(vocab, emb)
    assert n.normalize("type 2 diabetes", "Disease").vocab_id == "MESH:D003924"
    assert n.normalize("Herceptin", "Drug").method == "exact"
    assert n.candidates("T2D")[0][0].id == "MESH:D003924"


def test_homonym_does_not_merge_across_types(vocab, emb):
    n = Normalizer(vocab, emb)
    gene, disease = n.normalize("CAD", "Gene"), n.normalize("CAD", "Disease")
    assert gene.vocab_id == "GENE:CAD" and disease.vocab_id == "MESH:D003324"
    drug = n.normalize("CAD", "Drug")  # no Drug called CAD: a new node, not either of them
    assert (
        drug.vocab_id is None
        and drug.method == "new"
        and (drug.type, drug.key)
        != (
            gene.type,
            gene.key,
        )
    )


def test_threshold_without_llm(vocab, emb):
    n = Normalizer(vocab, emb)
    assert n.normalize("Coronary Artery Diseases", "Disease").method in ("vector", "new")
    assert n.normalize("Coronary Artery Disease risk", "Drug").vocab_id is None  # wrong type
    assert n.normalize("something unknown", "Gene").method == "new"


def test_llm_choice_and_type_guard(vocab, emb, mock_llm):
    llm = mock_llm([{"stage": "strata_normalize", "response": {"choice": 0}}])
    n = Normalizer(vocab, emb, llm)
    res = n.normalize("adult-onset diabetes", "Disease")
    assert res.method in ("llm", "new")
    cands = n.candidates("adult-onset diabetes", "Disease")
    if cands[0][0].type == "Disease":
        assert res.vocab_id == cands[0][0].id
    # the LLM picks candidate 0 of the wrong type: refused
    res2 = n.normalize("coronary artery disorder", "Drug")
    assert res2.vocab_id is None or n.vocab.get(res2.vocab_id).type == "Drug"
    null = mock_llm([{"stage": "strata_normalize", "response": {"choice": None}}])
    assert Normalizer(vocab, emb, null).normalize("xyz", "Gene").method == "new"


def test_candidates_are_the_top_five_of_each_vocabulary_serving_the_type(hash_embedder):
    from biorag.strata.normalize import source_of
    from biorag.strata.vocab import VocabEntry, Vocabulary

    diseases = [VocabEntry(f"MESH:D{i}", f"kinase disorder {i}", "Disease") for i in range(8)]
    genes = [VocabEntry("GENE:KDR1", "kinase disorder gene", "Gene"),
             VocabEntry("UNIPROT:P1", "kinase disorder protein", "Protein")]  # fmt: skip
    vocab = Vocabulary([*diseases, *genes])
    assert {source_of(e) for e in vocab.entries} == {"MESH", "UNIPROT"}
    n = Normalizer(vocab, hash_embedder)
    # a gene mention is looked up in UniProt only: MeSH's eight close diseases cannot crowd
    # its candidates out
    gene_cands = n.candidates("kinase disorder", "Gene")
    assert {source_of(e) for e, _ in gene_cands} == {"UNIPROT"} and len(gene_cands) == 2
    disease_cands = n.candidates("kinase disorder", "Disease")
    assert len(disease_cands) == 5 and {source_of(e) for e, _ in disease_cands} == {"MESH"}
    anything = n.candidates("kinase disorder")  # no type: five from each vocabulary at most
    assert len(anything) == 7
    scores = [s for _, s in anything]
    assert scores == sorted(scores, reverse=True)


def test_normalize_many_asks_the_choices_together_and_agrees_with_one_at_a_time(vocab, emb):
    import asyncio

    from biorag.llm import LLM, MockBackend

    class Slow(MockBackend):
        """Counts the calls in flight at once (``peak``)."""

        def __init__(self, **kw):
            super().__init__(**kw)
            self.in_flight = self.peak = 0

        async def chat(self, req):
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            await asyncio.sleep(0.02)
            self.in_flight -= 1
            return await super().chat(req)

    rules = [{"stage": "strata_normalize", "response": {"choice": 0}}]
    backend = Slow(rules=rules)
    llm = LLM(backend, max_retries=0, retry_base_delay=0.0, concurrency=3)
    pairs = [("adult-onset diabetes", "Disease"), ("coronary artery disorder", "Drug"),
             ("type 2 diabetes", "Disease"), ("kinase thing", "Gene"),
             ("Adult-onset  DIABETES", "Disease"), ("heart attack", "Disease")]  # fmt: skip
    many = Normalizer(vocab, emb, llm)
    got = many.normalize_many(pairs)
    one_at_a_time = Normalizer(vocab, emb, LLM(MockBackend(rules=rules), max_retries=0))
    assert got == [one_at_a_time.normalize(m, t) for m, t in pairs]
    assert got[0] == got[4]  # one mention, two spellings: asked once
    asked = len(backend.calls)
    assert asked == many.stats["asked"] == one_at_a_time.stats["asked"] >= 3
    assert backend.peak == 3  # together, up to the client's limit (3 or more are asked)
    # the same pairs through one call at a time: one in flight, the count would show it
    serial = Slow(rules=rules)
    one_slot = LLM(serial, max_retries=0, retry_base_delay=0.0, concurrency=1)
    assert Normalizer(vocab, emb, one_slot).normalize_many(pairs) == got
    assert serial.peak == 1 and len(serial.calls) == asked
