"""BioStrataKG from papers alone: no MeSH, no UniProt. Both levels are built; entities are found
by word shapes (or the LLM) and reported as unnormalized; the command says up front what a
vocabulary would add and where to get one."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from biorag.cli import strata_cmd
from biorag.kg import open_typed_store
from biorag.strata import build_strata
from biorag.strata.vocab import Vocabulary
from biorag.strata.word_shapes import ShapeMatcher


def shapes(text: str) -> list[tuple[str, str]]:
    return [(m[0], m[1]) for m in ShapeMatcher().find(text)]


def test_word_shapes_type_drugs_genes_proteins_and_diseases():
    text = (
        "Atorvastatin reduced LDL in subjects with coronary artery disease, and trastuzumab "
        "treats Breast Cancer with ERBB2 amplification; the insulin receptor was measured. "
        "The diagnosis of the disease was made in the TCGA database. BMI and ICU stay rose."
    )
    got = shapes(text)
    assert ("Atorvastatin", "Drug") in got and ("trastuzumab", "Drug") in got
    assert ("coronary artery disease", "Disease") in got and ("Breast Cancer", "Disease") in got
    assert ("ERBB2", "Gene") in got and ("insulin receptor", "Protein") in got
    words = {w for w, _ in got}
    # not entities: a generic head alone, -osis/-ase words that are not diseases or enzymes,
    # clinical abbreviations, a verb in front of a disease
    assert not words & {"diagnosis", "disease", "TCGA database", "BMI", "ICU"}
    assert not any(w.startswith("treats") for w in words)


def test_both_levels_are_built_without_a_vocabulary(tmp_path, emb, papers):
    rep = build_strata(papers, None, emb, Vocabulary(), tmp_path / "kg")
    assert rep.entities.startswith("found by word shapes") and "not normalized" in rep.entities
    assert rep.triplets >= 2 and rep.normalized == {"new": sum(rep.normalized.values())}
    for t in ("Paper", "Gene", "Drug", "Disease", "Method", "Dataset", "Domain"):
        assert rep.nodes.get(t), t
    with open_typed_store(rep.db_path) as s:
        assert s.find_nodes("Drug", "trastuzumab") and s.find_nodes("Gene", "erbb2")
        edges = rep.edges
        assert edges.get("TARGETS") or edges.get("TREATS"), edges


def test_the_command_says_what_a_vocabulary_adds(tmp_path, emb, papers, cli_components):
    cli_components(embedder=emb, llm=None)
    src = tmp_path / "papers.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in papers), encoding="utf-8")
    r = CliRunner().invoke(strata_cmd.app, ["build", "--papers", str(src), "--out",
                                            str(tmp_path / "kg"), "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "no vocabulary given" in r.stderr and "nlm.nih.gov" in r.stderr
    assert "uniprot.org" in r.stderr and "CC BY 4.0" in r.stderr
    report = json.loads(r.stdout)
    assert "not normalized" in report["entities"] and report["triplets"] >= 2
