"""BioStrataKG construction on the PubMedQA abstracts (ori_pqal.json, 1,000 papers).

Papers: pid = PMID, title = QUESTION (PubMedQA's questions are the article titles), abstract =
CONTEXTS joined, keywords = MESHES, year = YEAR; LONG_ANSWER is never read (the CLI loader).

No MeSH XML or UniProt TSV is available here. Without a vocabulary the no-LLM floor types no
entities at all (its triplet patterns and MENTIONS need vocabulary mentions; only the
document level - methods, datasets and keyword domains - is found). So, as a stand-in, a
small vocabulary is written from the PubMedQA MeSH terms themselves, typed by crude name
rules (``... Neoplasms``/``... Diseases``/``-itis``... -> Disease, ``... Agents``/
``... Inhibitors``/drug suffixes -> Drug, ``... Proteins``/``Receptor...`` -> Protein); no
genes. Both runs are reported.

Runs (each into a fresh directory, embedder all-MiniLM-L6-v2 on CPU, embedding cache off):
  * no-LLM floor, no vocabulary;
  * no-LLM floor, stand-in MeSH vocabulary: papers per second per stage, timed by wrapping
    the functions ``build_strata`` calls - extraction (triplet patterns, doc-level rules,
    mention matching), normalization (``Normalizer.normalize`` incl. the vector step,
    ``NameMatcher.canonical``), storage (``SQLiteTypedStore`` writes + commit, the typed
    tables of ``kg.sqlite``), projection (entity relations into the flat VectorGraphRAG store
    of the same file, and syncing its entity index);
  * dry-run model (mock backend, no model behind it), stand-in vocabulary: LLM calls per
    paper by stage (from the LLM's accounting).

    python benchmarks/bench_strata.py --out benchmarks/results/strata.json [--limit N]
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from biorag.cli.strata_cmd import load_papers
from biorag.config import Settings
from biorag.kg.stores.typed_sqlite import SQLiteTypedStore
from biorag.runtime import Runtime
from biorag.strata import build as sb
from biorag.strata.doclevel import NameMatcher
from biorag.strata.extract import MentionMatcher
from biorag.strata.normalize import Normalizer
from biorag.strata.vocab import VocabEntry, Vocabulary

DATA = Path("/work/shared/data/pubmedqa/ori_pqal.json")

_DISEASE = re.compile(
    r"(neoplasms?|diseases?|disorders?|syndrome|infections?|carcinoma|cancer|tumou?rs?|"
    r"itis|osis|emia|aemia|pathy|fractures?|injuries|wounds|failure|insufficiency|"
    r"diabetes mellitus.*|hypertension|obesity|stroke|asthma|sepsis|lymphoma|leukemia|"
    r"sarcoma|melanoma|pain|depression|dementia|infarction|stenosis|edema|hernia)$",
    re.I,
)
_DRUG = re.compile(
    r"(agents?|inhibitors?|antagonists?|agonists?|drugs?|vaccines?|antibiotics?|mab|"
    r"cillin|mycin|statin|pril|sartan|olol|azole|prazole|tidine|steroids?|insulin|"
    r"aspirin|metformin|heparin|warfarin|morphine|caffeine|ethanol)$",
    re.I,
)
_PROTEIN = re.compile(r"(proteins?|receptors?|kinases?|enzymes?|antibod(y|ies)|^receptor.*)$", re.I)


def mesh_type(term: str) -> str | None:
    head = term.split(",")[0].strip()
    if _PROTEIN.search(head):
        return "Protein"
    if _DRUG.search(head):
        return "Drug"
    if _DISEASE.search(head):
        return "Disease"
    return None


def standin_vocab(papers: list[dict[str, Any]]) -> tuple[Vocabulary, Counter[str]]:
    """Every distinct MeSH term of the papers that the name rules can type."""
    entries: dict[str, VocabEntry] = {}
    for p in papers:
        for term in p["keywords"]:
            t = mesh_type(term)
            if t and term.lower() not in entries:
                # "Diabetes Mellitus, Type 2" -> also "Type 2 Diabetes Mellitus"
                parts = [s.strip() for s in term.split(",")]
                syn = (" ".join(reversed(parts)),) if len(parts) == 2 else ()
                entries[term.lower()] = VocabEntry(f"STANDIN:{len(entries)}", term, t, syn)
    return Vocabulary(list(entries.values())), Counter(e.type for e in entries.values())


class StageTimer:
    """Wrap the functions build_strata calls; seconds per stage (exclusive, non-nested)."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, stage: str) -> None:
        orig = getattr(owner, name)
        seconds = self.seconds

        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                seconds[stage] += time.perf_counter() - t0

        self._undo.append((owner, name, orig))
        setattr(owner, name, timed)

    def __enter__(self) -> StageTimer:
        for n in ("extract_triplets_rules", "extract_doc_rules"):
            self.wrap(sb, n, "extraction")
        for n in ("extract_triplets_llm", "extract_doc_llm"):
            self.wrap(sb, n, "extraction_llm")
        self.wrap(MentionMatcher, "find", "extraction")
        self.wrap(Normalizer, "normalize", "normalization")
        self.wrap(NameMatcher, "canonical", "normalization")
        for n in ("upsert_node", "add_aliases", "add_edge", "commit"):
            self.wrap(SQLiteTypedStore, n, "storage")
        for n in ("project_entity_level", "sync_entity_index"):
            self.wrap(sb, n, "projection")
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, orig in reversed(self._undo):
            setattr(owner, name, orig)


def run(papers, vocab, embedder, llm, label: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d, StageTimer() as timer:
        t0 = time.perf_counter()
        rep = sb.build_strata(papers, llm, embedder, vocab, Path(d) / "kg")
        total = time.perf_counter() - t0
    n = len(papers)
    stages = {k: round(v, 3) for k, v in sorted(timer.seconds.items())}
    row: dict[str, Any] = {
        "run": label,
        "papers": rep.papers,
        "mode": rep.mode,
        "vocab_entries": len(vocab),
        "seconds_total": round(total, 3),
        "papers_per_s_total": round(n / total, 1),
        "seconds_by_stage": stages,
        "papers_per_s_by_stage": {k: round(n / v, 1) if v else None for k, v in stages.items()},
        "triplets": rep.triplets,
        "flat_triplets_added": rep.flat_triplets_added,
        "normalized": rep.normalized,
        "llm_fallbacks": rep.llm_fallbacks,
        "nodes": dict(sorted(rep.nodes.items())),
        "edges": dict(sorted(rep.edges.items())),
    }
    if llm is not None:
        acc = llm.accounting.report()
        st = acc.get("stages", acc)
        row["llm_calls_by_stage"] = {
            k: v.get("calls", 0) for k, v in st.items() if isinstance(v, dict)
        }
        row["llm_calls_per_paper_by_stage"] = {
            k: round(c / n, 3) for k, c in row["llm_calls_by_stage"].items()
        }
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    out = [
        "| run | papers | vocab | total p/s | extraction p/s | normalization p/s | storage p/s "
        "| projection p/s | LLM calls/paper by stage | triplets | nodes by type | edges by type |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ps = r["papers_per_s_by_stage"]
        llm = r.get("llm_calls_per_paper_by_stage")
        out.append(
            f"| {r['run']} | {r['papers']} | {r['vocab_entries']} | {r['papers_per_s_total']} "
            f"| {ps.get('extraction')} | {ps.get('normalization')} | {ps.get('storage')} "
            f"| {ps.get('projection')} "
            f"| {', '.join(f'{k} {v}' for k, v in llm.items()) if llm else '- (no LLM)'} "
            f"| {r['triplets']} | {', '.join(f'{k} {v}' for k, v in r['nodes'].items())} "
            f"| {', '.join(f'{k} {v}' for k, v in r['edges'].items())} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/strata.json"))
    a = ap.parse_args()
    logging.getLogger("biorag.strata.build").setLevel(logging.ERROR)  # fallbacks counted
    papers = load_papers(a.data, a.limit)
    base = Settings.model_validate({"embed": {"cache": False}})
    embedder = Runtime(base).embedder
    embedder.embed(["warm up"])  # load the model outside the timings
    vocab, vtypes = standin_vocab(papers)
    print(f"{len(papers)} papers; stand-in vocabulary {len(vocab)} {dict(vtypes)}", file=sys.stderr)
    rows = [
        run(papers, Vocabulary(), embedder, None, "no-LLM, no vocabulary"),
        run(papers, vocab, embedder, None, "no-LLM, stand-in MeSH vocab"),
    ]
    dry = Settings.model_validate(
        {
            "llm": {"backend": "mock", "mock_script": "dry-run", "cache": False},
            "embed": {"cache": False},
        }
    )
    llm = Runtime(dry).llm
    try:
        rows.append(run(papers, vocab, embedder, llm, "dry-run LLM, stand-in MeSH vocab"))
    finally:
        llm.close()
    table = markdown(rows)
    print(table)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(
        json.dumps(
            {
                "data": str(a.data),
                "limit": a.limit,
                "standin_vocab_types": dict(vtypes),
                "embedder": getattr(embedder, "model_id", "?"),
                "runs": rows,
                "table": table,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
