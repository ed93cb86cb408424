"""Dataset loaders on the real benchmark files in ../shared/data (skipped when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from biorag.corpus.datasets import load_dataset

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
RAW = SHARED / "mirage" / "rawdata"
MEDQA = RAW / "medqa" / "data_clean" / "questions" / "US" / "4_options"

pytestmark = [
    pytest.mark.shared,
    pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data is not beside this checkout"),
]


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


def test_pubmedqa_splits() -> None:
    path = _need(SHARED / "pubmedqa" / "ori_pqal.json")
    test = load_dataset("pubmedqa", path, split="test")
    dev = load_dataset("pubmedqa", path, split="dev", setting="reasoning-required")
    assert (len(test.items), len(dev.items), test.skipped) == (500, 500, [])
    assert test.info["test_label_mismatches"] == 0
    assert sum(it.gold == "A" for it in test.items) == 276  # 55.2% yes
    assert not {it.id for it in test.items} & {it.id for it in dev.items}
    assert all(it.context for it in dev.items) and not any(it.context for it in test.items)


def test_mirage_counts_and_agreement_with_raw_files() -> None:
    res = load_dataset("mirage", _need(SHARED / "mirage" / "benchmark.json"))
    assert len(res.items) == 7663 and res.skipped == []
    assert res.info["by_subset"] == {
        "mmlu": 1089,
        "medqa": 1273,
        "medmcqa": 4183,
        "pubmedqa": 500,
        "bioasq": 618,
    }
    mirage = {it.id: (it.gold, it.options, it.question) for it in res.items}
    raw = [
        ("medqa", load_dataset("medqa", _need(MEDQA / "phrases_no_exclude_test.jsonl"))),
        ("mmlu", load_dataset("mmlu", _need(RAW / "mmlu" / "data" / "test"))),
        ("medmcqa", load_dataset("medmcqa", RAW / "medmcqa" / "data", single_only=False)),
        ("bioasq", load_dataset("bioasq", _need(RAW / "bioasq"), split="yesno")),
        ("pubmedqa", load_dataset("pubmedqa", SHARED / "pubmedqa", split="test")),
    ]
    for subset, loaded in raw:
        assert loaded.skipped == []
        assert len(loaded.items) == res.info["by_subset"][subset]
        for it in loaded.items:
            assert mirage[f"{subset}/{it.id}"] == (it.gold, it.options, it.question)


def test_medqa_and_mmlu_counts() -> None:
    medqa = load_dataset("medqa", _need(MEDQA))
    assert len(medqa.items) == 1273
    assert medqa.info["by_subset"] == {"step1": 679, "step2&3": 594}
    mmlu = load_dataset("mmlu", _need(RAW / "mmlu" / "data" / "test"))
    assert mmlu.info["by_subset"] == {
        "anatomy": 135,
        "clinical_knowledge": 265,
        "college_biology": 144,
        "college_medicine": 173,
        "medical_genetics": 100,
        "professional_medicine": 272,
    }


def test_medmcqa_single_choice() -> None:
    res = load_dataset("medmcqa", _need(RAW / "medmcqa" / "data" / "dev.json"))
    assert (res.info["parsed"], len(res.items), res.info["filtered_multi"]) == (4183, 2816, 1367)


def test_bioasq_counts_by_type() -> None:
    every = load_dataset("bioasq", _need(RAW / "bioasq"))
    assert len(every.items) == 2310 and every.skipped == []
    assert every.info["by_subset"] == {"7b": 500, "8b": 500, "9b": 497, "10b": 486, "11b": 327}
    assert every.info["by_type"] == {"yesno": 618, "factoid": 740, "list": 409, "summary": 543}
    b11 = load_dataset("bioasq", RAW / "bioasq" / "Task11BGoldenEnriched")
    assert b11.info["by_type"] == {"yesno": 86, "factoid": 98, "list": 64, "summary": 79}
    yesno = [it for it in every.items if it.question_type == "yesno"]
    assert sum(it.gold == "A" for it in yesno) == 395  # 63.9% yes
    assert all(it.gold_docs and it.gold_snippets for it in every.items)
