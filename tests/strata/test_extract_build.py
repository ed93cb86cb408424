from __future__ import annotations

from biorag.kg import open_typed_store
from biorag.strata import build_strata
from biorag.strata.doclevel import NameMatcher
from biorag.strata.extract import (
    extract_doc_llm,
    extract_doc_rules,
    extract_triplets_llm,
    extract_triplets_rules,
    find_mentions,
)
from biorag.strata.queries import (
    drugs_for_disease,
    gene_disease_chains,
    methods_datasets_of_domain,
    papers_by_domain,
    related_papers,
)

ABSTRACT = "Trastuzumab targets ERBB2. Metformin treats Type 2 Diabetes in older adults."


def test_mentions_dictionary(vocab):
    found = {(s, t) for s, t, _, _ in find_mentions(ABSTRACT, vocab)}
    assert ("ERBB2", "Gene") in found and ("Type 2 Diabetes", "Disease") in found
    assert ("Metformin", "Drug") in found


def test_no_llm_triplets(vocab):
    got = {(t.subject, t.relation, t.object) for t in extract_triplets_rules(ABSTRACT, vocab)}
    assert ("Trastuzumab", "targets", "ERBB2") in got
    assert ("Metformin", "treats", "Type 2 Diabetes") in got
    assert extract_triplets_rules("Metformin did not treat Type 2 Diabetes.", vocab) == []


def test_mock_llm_triplets_filter_types(mock_llm):
    rows = [
        {"subject": "aspirin", "subject_type": "drug", "relation": "treats",
         "object": "stroke", "object_type": "Disease"},
        {"subject": "aspirin", "subject_type": "Drug", "relation": "lowers",
         "object": "platelets", "object_type": "Cell"},
        {"subject": "PTGS1", "subject_type": "Gene", "relation": "weird",
         "object": "stroke", "object_type": "Disease"},
    ]  # fmt: skip
    llm = mock_llm([{"stage": "strata_triplets", "response": rows}])
    got = extract_triplets_llm(llm, "t", "a")
    assert [(t.subject_type, t.relation) for t in got] == [
        ("Drug", "treats"),
        ("Gene", "associated_with"),
    ]


def test_doc_level_rules_and_llm(mock_llm):
    doc = extract_doc_rules(
        "A cohort", "A randomized controlled trial and RNA-seq of the UK Biobank cohort.", ["X"]
    )
    assert {"randomized controlled trial", "RNA-seq"} <= set(doc.methods)
    assert "UK Biobank" in doc.datasets and "x" in doc.domains
    llm = mock_llm([{"stage": "strata_doc", "response": {
        "methods": ["GWAS"], "datasets": ["UK Biobank"], "domains": ["genetics"]}}])  # fmt: skip
    info = extract_doc_llm(llm, "t", "a")
    assert info.methods == ["GWAS"] and info.source == "llm"


def test_name_matcher_joins_similar(emb):
    m = NameMatcher(emb)
    assert m.canonical("Method", "RNA-seq analysis") == "RNA-seq analysis"
    assert m.canonical("Method", "rna-seq analysis") == "RNA-seq analysis"
    assert m.canonical("Method", "RNA seq analysis of tumours") == "RNA-seq analysis"
    assert m.canonical("Method", "molecular docking") == "molecular docking"


def test_build_no_llm_and_queries(tmp_path, vocab, emb, papers):
    rep = build_strata(papers, None, emb, vocab, tmp_path / "kg")
    assert rep.papers == 3 and rep.triplets >= 4 and rep.mode == "no-llm"
    assert (tmp_path / "kg" / "build_report.json").is_file()
    for t in ("Paper", "Gene", "Drug", "Disease", "Method", "Dataset", "Domain"):
        assert rep.nodes.get(t), t
    for e in ("MENTIONS", "USES_METHOD", "USES_DATASET", "IN_DOMAIN", "CITES", "TREATS"):
        assert rep.edges.get(e), e
    with open_typed_store(rep.db_path) as s:
        drugs = drugs_for_disease(s, "Breast Neoplasms")
        assert drugs[0]["drug"] == "Trastuzumab" and drugs[0]["papers"] == ["P1"]
        assert drugs_for_disease(s, "type 2 diabetes")[0]["drug"] == "Metformin"
        chains = gene_disease_chains(s, "ERBB2")
        assert any(c["path"][2] == "TP53" and c["path"][-1] == "Breast Neoplasms" for c in chains)
        assert [p["pid"] for p in papers_by_domain(s, "oncology")] == ["P1", "P2"]
        md = methods_datasets_of_domain(s, "oncology")
        assert {"randomized controlled trial", "RNA-seq"} <= {m for m, _ in md["methods"]}
        assert {"METABRIC", "TCGA"} <= {d for d, _ in md["datasets"]}
        rel = {r["pid"]: r["shared"] for r in related_papers(s, "P1")}
        assert "CITES" in rel["P2"] and "oncology" in rel["P2"]
        stub = s.find_nodes("Paper", "X9")[0]
        assert stub["attrs"].get("stub") is True
        # CAD: the gene symbol wins in the no-LLM dictionary; it never merges with the disease
        assert (
            not s.find_nodes("Disease", "CAD")
            or not s.find_nodes("Gene", "CAD")
            or (s.find_nodes("Disease", "CAD")[0]["id"] != s.find_nodes("Gene", "CAD")[0]["id"])
        )


def test_build_mock_llm_merges_with_provenance(tmp_path, vocab, emb, papers, mock_llm):
    trip = [{"subject": "Herceptin", "subject_type": "Drug", "relation": "treats",
             "object": "breast cancer", "object_type": "Disease"},
            {"subject": "CAD", "subject_type": "Gene", "relation": "associated_with",
             "object": "CAD", "object_type": "Disease"}]  # fmt: skip
    doc = {"methods": ["randomised trial"], "datasets": [], "domains": ["Oncology"]}
    llm = mock_llm([
        {"stage": "strata_triplets", "response": trip},
        {"stage": "strata_doc", "response": doc},
        {"stage": "strata_normalize", "response": {"choice": None}},
    ])  # fmt: skip
    rep = build_strata(papers, llm, emb, vocab, tmp_path / "kg")
    assert rep.mode == "llm" and rep.llm_fallbacks == 0
    with open_typed_store(rep.db_path) as s:
        drugs = drugs_for_disease(s, "Breast Neoplasms")
        assert drugs == [
            {"drug": "Trastuzumab", "relation": "TREATS", "papers": ["P1", "P2", "P3"]}
        ]
        gene, dis = s.find_nodes("Gene", "CAD"), s.find_nodes("Disease", "MESH:D003324")
        assert gene[0]["vocab_id"] == "GENE:CAD" and dis[0]["vocab_id"] == "MESH:D003324"
        assert len(s.edges(src=gene[0]["id"], dst=dis[0]["id"])) == 3  # one per paper
        assert len(s.nodes("Domain")) == 1


def test_build_llm_failure_falls_back(tmp_path, vocab, emb, papers, mock_llm):
    llm = mock_llm([{"error": "fatal"}])
    rep = build_strata(papers[:1], llm, emb, vocab, tmp_path / "kg")
    assert rep.llm_fallbacks == 1 and rep.triplets >= 1


def test_drug_drug_synergy_and_antagonism(tmp_path, vocab, emb):
    from biorag.strata.queries import drug_interactions

    def rel(text):
        return {(t.subject, t.relation, t.object) for t in extract_triplets_rules(text, vocab)}

    syn = "Metformin acted synergistically with Herceptin in resistant cells."
    assert ("Metformin", "synergizes_with", "Herceptin") in rel(syn)
    anta = "Trastuzumab antagonizes Metformin uptake in vitro."
    assert ("Trastuzumab", "antagonizes", "Metformin") in rel(anta)
    # negated, or "antagonist" (a receptor antagonist is no drug-drug antagonism): none
    assert not {r for r in rel("Metformin showed no synergy with Trastuzumab.") if "syn" in r[1]}
    given = "Metformin, an AMPK antagonist, and Trastuzumab were given."
    assert not {r for r in rel(given) if r[1] == "antagonizes"}
    # passive voice: the drug after "by" is the agent; a negation elsewhere does not count
    passive = "The effect of Metformin was antagonized by Trastuzumab."
    assert {r for r in rel(passive) if r[1] == "antagonizes"} == {
        ("Trastuzumab", "antagonizes", "Metformin")
    }
    far = "Trastuzumab and Metformin acted synergistically, with no added toxicity."
    assert ("Trastuzumab", "synergizes_with", "Metformin") in rel(far)

    papers = [
        {"pid": "S1", "title": "Synergy", "abstract": syn},
        {"pid": "S2", "title": "Antagonism", "abstract": anta},
    ]
    build_strata(papers, None, emb, vocab, tmp_path / "kg")
    with open_typed_store(tmp_path / "kg") as store:
        rows = drug_interactions(store, "Glucophage")  # a synonym of Metformin
    assert [(r["drug"], r["relation"], r["other"], r["direction"], r["papers"]) for r in rows] == [
        ("Metformin", "ANTAGONIZES", "Trastuzumab", "in", ["S2"]),
        ("Metformin", "SYNERGIZES_WITH", "Trastuzumab", "out", ["S1"]),
    ]
