"""One small valid file per input format, for the fuzz tests to truncate and corrupt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from devkit.strata_vocab import MESH_XML, UNIPROT_TSV
from tests.corpus.test_corpus_loaders_xml_text import PUBMED_XML
from tests.eval.test_datasets_mc import _mcq, _mirage, _mq, _pqal
from tests.eval.test_datasets_qa import _cd, _mash, _q
from tests.strata.conftest import PAPERS


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def corpus_jsonl(d: Path) -> Path:
    rows = [{"id": f"d{i}", "title": f"T{i}", "text": f"Metformin study {i}."} for i in range(6)]
    return _write(d / "corpus.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def medrag_chunks(d: Path) -> Path:
    rows = [
        {"id": f"pmid{i // 2}_{i % 2}", "title": f"T{i // 2}", "content": f"Snippet {i}.",
         "contents": f"T{i // 2}. Snippet {i}."}
        for i in range(6)
    ]  # fmt: skip
    return _write(d / "chunk" / "pubmed_0.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def pubmed_xml(d: Path) -> Path:
    return _write(d / "pubmed.xml", PUBMED_XML)


def pubmedqa_corpus(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    return _pqal(d)


def bioasq_json(d: Path) -> Path:
    qs = [_q("q1", "yesno", "yes"), _q("q2", "factoid", [["aspirin"]]), _q("q3", "summary")]
    return _write(d / "BioASQ-training.json", json.dumps({"questions": qs}, indent=1))


def papers_jsonl(d: Path) -> Path:
    return _write(d / "papers.jsonl", "".join(json.dumps(p) + "\n" for p in PAPERS))


def mesh_xml(d: Path) -> Path:
    return _write(d / "desc.xml", MESH_XML)


def uniprot_tsv(d: Path) -> Path:
    return _write(d / "uniprot.tsv", UNIPROT_TSV)


def medqa_jsonl(d: Path) -> Path:
    return _write(d / "test.jsonl", "\n".join(_mq(f"Q{i}?") for i in range(5)) + "\n")


def medmcqa_jsonl(d: Path) -> Path:
    return _write(d / "dev.json", "\n".join(_mcq(i, 1 + i % 4) for i in range(5)) + "\n")


def mmlu_csv(d: Path) -> Path:
    rows = "".join(f"Q{i}?,a,b,c,d,{'ABCD'[i % 4]}\n" for i in range(5))
    return _write(d / "test" / "anatomy_test.csv", rows)


def biocdqa_jsonl(d: Path) -> Path:
    return _write(d / "biocdqa.jsonl", "".join(json.dumps(_cd(i)) + "\n" for i in range(5)))


Sample = Callable[[Path], Path]

CORPUS_SAMPLES: dict[str, Sample] = {
    "jsonl": corpus_jsonl,
    "medrag": medrag_chunks,
    "pubmed_xml": pubmed_xml,
    "pubmedqa": pubmedqa_corpus,
    "bioasq": bioasq_json,
}


def mirage_json(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    return _mirage(d)


def mashqa_json(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    return _mash(d)


DATASET_SAMPLES: dict[str, Sample] = {
    "pubmedqa": pubmedqa_corpus,
    "medqa": medqa_jsonl,
    "medmcqa": medmcqa_jsonl,
    "mmlu": mmlu_csv,
    "bioasq": bioasq_json,
    "mirage": mirage_json,
    "mashqa": mashqa_json,
    "biocdqa": biocdqa_jsonl,
}
