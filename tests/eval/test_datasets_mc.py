"""Dataset loaders for the multiple-choice benchmarks, on small files written in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biorag.corpus.datasets import DATASETS, DatasetLoad, QAItem, canonical_name, load_dataset
from biorag.errors import ConfigError, InputFormatError

LONG_ANSWER = "CONCLUSION-SENTINEL: statins clearly reduce the risk."


def _pqal(tmp_path: Path, *, bad: bool = False, ground_truth: bool = True) -> Path:
    recs = {
        "111": {
            "QUESTION": "Do statins reduce risk?",
            "CONTEXTS": ["Background sentence.", "Results sentence."],
            "LABELS": ["BACKGROUND", "RESULTS"],
            "MESHES": ["Statins"],
            "YEAR": "2001",
            "reasoning_required_pred": "yes",
            "reasoning_free_pred": "yes",
            "final_decision": "yes",
            "LONG_ANSWER": LONG_ANSWER,
        },
        "222": {
            "QUESTION": "Is aspirin useless?",
            "CONTEXTS": ["Aspirin context."],
            "LABELS": ["RESULTS"],
            "MESHES": [],
            "final_decision": "maybe",
            "LONG_ANSWER": LONG_ANSWER,
        },
        "333": {
            "QUESTION": "Does vitamin D help?",
            "CONTEXTS": ["Vitamin D context."],
            "final_decision": "no",
            "LONG_ANSWER": LONG_ANSWER,
        },
    }
    if bad:
        recs["444"] = {"QUESTION": "No decision here?", "CONTEXTS": []}
        recs["555"] = {"QUESTION": "", "CONTEXTS": [], "final_decision": "yes"}
    path = tmp_path / "ori_pqal.json"
    path.write_text(json.dumps(recs, indent=1), encoding="utf-8")
    if ground_truth:
        gt = {"111": "yes", "333": "no"}
        (tmp_path / "test_ground_truth.json").write_text(json.dumps(gt), encoding="utf-8")
    return path


def test_registry_names_and_unknown() -> None:
    assert set(DATASETS) == {
        "pubmedqa",
        "mirage",
        "medqa",
        "mmlu",
        "medmcqa",
        "bioasq",
        "mashqa",
        "biocdqa",
    }
    assert canonical_name("MASH-QA") == "mashqa"
    with pytest.raises(ConfigError, match="unknown dataset"):
        load_dataset("nope", "x")


def test_unknown_option_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="single_only"):
        load_dataset("pubmedqa", _pqal(tmp_path), single_only=True)


def test_pubmedqa_items_and_splits(tmp_path: Path) -> None:
    path = _pqal(tmp_path)
    res = load_dataset("pubmedqa", path)
    assert isinstance(res, DatasetLoad)
    assert [it.id for it in res.items] == ["111", "222", "333"]
    first = res.items[0]
    assert isinstance(first, QAItem)
    assert first.options == {"A": "yes", "B": "no", "C": "maybe"}
    assert [it.gold for it in res.items] == ["A", "C", "B"]
    assert first.question_type == "yesno"
    assert first.gold_docs == ["111"]
    assert first.context == []  # open setting: retrieve from a corpus
    test = load_dataset("pubmedqa", tmp_path, split="test")  # a folder works too
    assert [it.id for it in test.items] == ["111", "333"]
    assert test.info["test_missing"] == 0
    dev = load_dataset("pubmedqa", path, split="dev")
    assert [it.id for it in dev.items] == ["222"]
    assert dev.items[0].meta["split"] == "dev"


def test_pubmedqa_reasoning_required_context_and_no_long_answer(tmp_path: Path) -> None:
    res = load_dataset("pubmedqa", _pqal(tmp_path), setting="reasoning-required")
    assert res.items[0].context == ["Background sentence.", "Results sentence."]
    for setting in (None, "open", "reasoning-required"):
        for it in load_dataset("pubmedqa", _pqal(tmp_path), setting=setting).items:
            dumped = it.model_dump_json()
            assert "CONCLUSION-SENTINEL" not in dumped
            assert "LONG_ANSWER" not in dumped
            assert "reasoning_free_pred" not in dumped
    with pytest.raises(ConfigError, match="LONG_ANSWER"):
        load_dataset("pubmedqa", _pqal(tmp_path), setting="reasoning-free")
    with pytest.raises(ConfigError, match="setting"):
        load_dataset("pubmedqa", _pqal(tmp_path), setting="closed")


def test_pubmedqa_malformed_records_skipped(tmp_path: Path) -> None:
    res = load_dataset("pubmedqa", _pqal(tmp_path, bad=True))
    assert len(res.items) == 3
    assert len(res.skipped) == 2 and res.info["skipped"] == 2
    reasons = " | ".join(s.reason for s in res.skipped)
    assert "444" in reasons and "final_decision" in reasons and "555" in reasons
    assert all(s.file.endswith("ori_pqal.json") and s.line for s in res.skipped)


def test_pubmedqa_errors(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match="does not exist"):
        load_dataset("pubmedqa", tmp_path / "missing.json")
    path = _pqal(tmp_path, ground_truth=False)
    with pytest.raises(InputFormatError, match="test_ground_truth"):
        load_dataset("pubmedqa", path, split="test")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"questions": []}), encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"wrong\.json.*QUESTION"):
        load_dataset("pubmedqa", wrong)
    with pytest.raises(ConfigError, match="split"):
        load_dataset("pubmedqa", path, split="train")


def _mirage(tmp_path: Path, extra: dict | None = None) -> Path:
    data = {
        "medqa": {
            "0000": {"question": "Q1?", "options": {"A": "a", "B": "b"}, "answer": "B"},
            "0001": {"question": "Q2?", "options": {"A": "a", "B": "b"}, "answer": "A"},
        },
        "pubmedqa": {
            "0000": {
                "question": "Q3?",
                "options": {"A": "yes", "B": "no", "C": "maybe"},
                "answer": "C",
                "PMID": [123],
            }
        },
    }
    for k, v in (extra or {}).items():
        data.setdefault(k, {}).update(v)
    path = tmp_path / "benchmark.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_mirage_subsets_ids_and_filter(tmp_path: Path) -> None:
    res = load_dataset("mirage", _mirage(tmp_path))
    assert [it.id for it in res.items] == ["medqa/0000", "medqa/0001", "pubmedqa/0000"]
    assert res.info["by_subset"] == {"medqa": 2, "pubmedqa": 1}
    pqa = res.items[2]
    assert (pqa.subset, pqa.gold, pqa.gold_docs, pqa.question_type) == (
        "pubmedqa",
        "C",
        ["123"],
        "yesno",
    )
    assert res.items[0].question_type == "multiple_choice"
    only = load_dataset("mirage", tmp_path, split="medqa", limit=1)
    assert [it.id for it in only.items] == ["medqa/0000"]
    assert only.info["selected"] == 2 and only.info["count"] == 1
    assert [it.id for it in load_dataset("mirage", tmp_path, setting="pubmedqa").items] == [
        "pubmedqa/0000"
    ]
    with pytest.raises(ConfigError, match="unknown subset"):
        load_dataset("mirage", tmp_path, split="mmlu")


def test_mirage_malformed_and_wrong_shape(tmp_path: Path) -> None:
    bad = {"medqa": {"0002": {"question": "Q?", "options": {"A": "a"}, "answer": "Z"}}}
    res = load_dataset("mirage", _mirage(tmp_path, bad))
    assert len(res.items) == 3 and len(res.skipped) == 1
    assert "medqa/0002" in res.skipped[0].reason and res.skipped[0].line is not None
    wrong = tmp_path / "other.json"
    wrong.write_text(json.dumps({"questions": []}), encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"other\.json.*subset"):
        load_dataset("mirage", wrong)


def _medqa(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "phrases_no_exclude_test.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _mq(q: str, idx: str = "A", step: str = "step1") -> str:
    opts = {"A": "one", "B": "two", "C": "three", "D": "four"}
    rec = {"question": q, "answer": opts.get(idx, "?"), "options": opts, "answer_idx": idx}
    return json.dumps(rec | {"meta_info": step, "metamap_phrases": []})


def test_medqa_ids_gold_and_skips(tmp_path: Path) -> None:
    lines = [_mq("Q0?"), "{not json", _mq("Q2?", "C", "step2&3"), _mq("Q3?", "E"), "[1, 2]"]
    res = load_dataset("medqa", _medqa(tmp_path, lines))
    assert [(it.id, it.gold, it.subset) for it in res.items] == [
        ("0000", "A", "step1"),
        ("0002", "C", "step2&3"),
    ]
    assert res.items[1].meta["answer_text"] == "three"
    assert [s.line for s in res.skipped] == [2, 4, 5]
    assert "invalid JSON" in res.skipped[0].reason and "'E'" in res.skipped[1].reason
    step = load_dataset("medqa", tmp_path / "phrases_no_exclude_test.jsonl", split="step2&3")
    assert [it.id for it in step.items] == ["0002"]


def test_medqa_wrong_shape(tmp_path: Path) -> None:
    csv_file = tmp_path / "x.csv"
    csv_file.write_text("question,A,B,C,D,answer\nq,a,b,c,d,A\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"x\.csv.*MedQA"):
        load_dataset("medqa", csv_file)
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps({"a": {"b": 1}}, indent=2), encoding="utf-8")
    with pytest.raises(InputFormatError, match="one JSON object"):
        load_dataset("medqa", pretty)


def _mmlu(folder: Path, subject: str, rows: str, part: str = "test") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{subject}_{part}.csv"
    path.write_text(rows, encoding="utf-8")
    return path


def test_mmlu_folder_file_subjects_and_skips(tmp_path: Path) -> None:
    folder = tmp_path / "test"
    _mmlu(folder, "anatomy", 'Q1?,a,b,c,d,A\n"Multi\nline, ""quoted""?",a,"b, c",c,d,B\n')
    _mmlu(folder, "medical_genetics", "G1?,a,b,c,d,D\nbroken,row\nG3?,a,b,c,d,X\n")
    _mmlu(folder, "astronomy", "Not medical?,a,b,c,d,A\n")
    res = load_dataset("mmlu", folder)
    assert [it.id for it in res.items] == ["anatomy-000", "anatomy-001", "medical_genetics-000"]
    multi = res.items[1]
    assert multi.question == 'Multi\nline, "quoted"?' and multi.options["B"] == "b, c"
    assert multi.gold == "B" and multi.subset == "anatomy" and multi.meta["part"] == "test"
    assert [(Path(s.file).name, s.line) for s in res.skipped] == [
        ("medical_genetics_test.csv", 2),
        ("medical_genetics_test.csv", 3),
    ]
    assert res.info["by_subset"] == {"anatomy": 2, "medical_genetics": 1}
    gen = load_dataset("mmlu", folder, split="medical_genetics")
    assert [it.id for it in gen.items] == ["medical_genetics-000"]
    one = load_dataset("mmlu", folder / "astronomy_test.csv")  # an explicit file is read
    assert one.items[0].subset == "astronomy"
    with pytest.raises(ConfigError, match="subject"):
        load_dataset("mmlu", folder, split="astronomy")


def test_mmlu_val_ids_and_wrong_shape(tmp_path: Path) -> None:
    val = _mmlu(tmp_path / "val", "anatomy", "Q?,a,b,c,d,C\n", part="val")
    assert load_dataset("mmlu", val).items[0].id == "anatomy-val-000"
    js = tmp_path / "anatomy_test.csv"
    js.write_text('{"questions": [\n{"a": 1}\n]}\n', encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"anatomy_test\.csv.*MMLU"):
        load_dataset("mmlu", js)
    with pytest.raises(InputFormatError, match="no <subject>"):
        load_dataset("mmlu", _empty(tmp_path))


def _empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "astronomy_test.csv").write_text("Q?,a,b,c,d,A\n", encoding="utf-8")
    return folder


def _mcq(i: int, cop: object, choice: str = "single", **kw: object) -> str:
    rec = {"question": f"Q{i}?", "exp": "Ans. a: the answer is A", "cop": cop}
    rec |= {"opa": "a", "opb": "b", "opc": "c", "opd": "d", "subject_name": "Anatomy"}
    rec |= {"topic_name": None, "id": f"id-{i}", "choice_type": choice}
    return json.dumps(rec | kw)


def test_medmcqa_single_only_cop_and_skips(tmp_path: Path) -> None:
    lines = [_mcq(0, 1), _mcq(1, 4, "multi"), _mcq(2, 0), _mcq(3, "2", subject_name="Surgery")]
    path = tmp_path / "dev.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = load_dataset("medmcqa", path)
    assert [(it.id, it.gold) for it in res.items] == [("id-0", "A"), ("id-3", "B")]
    assert res.info["filtered_multi"] == 1 and res.info["multi_choice"] == 1
    assert len(res.skipped) == 1 and res.skipped[0].line == 3
    assert "cop_base=0" in res.skipped[0].reason
    assert all("answer is A" not in it.model_dump_json() for it in res.items)  # no `exp`
    every = load_dataset("medmcqa", path, single_only=False)
    assert [it.gold for it in every.items] == ["A", "D", "B"]
    assert every.info["filtered_multi"] == 0
    zero = load_dataset("medmcqa", path, single_only=False, cop_base=0)
    assert [it.gold for it in zero.items] == ["B", "A", "C"]  # cop 4 is out of range now
    assert load_dataset("medmcqa", path, split="Surgery").info["count"] == 1


def test_medmcqa_unlabelled_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "test.json"
    path.write_text(_mcq(0, -1) + "\n" + _mcq(1, None) + "\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"test\.json.*none of its 2 records"):
        load_dataset("medmcqa", path)


def test_limit_validation(tmp_path: Path) -> None:
    path = _pqal(tmp_path)
    assert load_dataset("pubmedqa", path, limit=0).items == []
    assert [it.id for it in load_dataset("pubmedqa", path, limit=2).items] == ["111", "222"]
    with pytest.raises(ConfigError, match="limit"):
        load_dataset("pubmedqa", path, limit=-1)
