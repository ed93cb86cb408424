"""``--scoring official`` against the benchmarks' own evaluators, run as their authors published
them from ``../shared/official/`` (never copied in): PubMedQA's ``evaluation.py`` as a script
on the whole test set, and MIRAGE's ``evaluate`` with its ``locate_answer`` on a whole subset.
The predictions mix right, wrong, unanswered and unparsed answers, so the edge cases where
``official`` and ``biorag`` scoring part are in the comparison. Skipped without ../shared."""

from __future__ import annotations

import importlib.util
import json
import random
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from biorag.answer.locate import mirage_locate_answer
from biorag.corpus.datasets import load_dataset
from biorag.corpus.datasets.base import QAItem
from biorag.eval.metrics import score_dataset
from biorag.eval.metrics.official import UNANSWERED

OFFICIAL = Path(__file__).resolve().parents[2].parent / "shared" / "official"
YNM = {"A": "yes", "B": "no", "C": "maybe"}
LETTER = {"yes": "A", "no": "B", "maybe": "C"}


@pytest.fixture
def official() -> Path:
    if not OFFICIAL.is_dir():
        pytest.skip("../shared/official is not beside this checkout")
    return OFFICIAL


def test_pubmedqa_scores_equal_its_own_evaluation_script(
    official: Path, shared_data: Path, tmp_path: Path
) -> None:
    truth = json.loads((shared_data / "pubmedqa" / "test_ground_truth.json").read_text())
    rng = random.Random(29)
    items, preds, submitted = [], {}, {}
    for pmid, gold in truth.items():
        items.append(QAItem(id=pmid, dataset="pubmedqa", question="q", options=YNM,
                            gold=LETTER[gold], question_type="yesno"))  # fmt: skip
        roll = rng.random()
        if roll < 0.04:  # unanswered
            preds[pmid], submitted[pmid] = {"prediction": ""}, UNANSWERED
        elif roll < 0.07:  # unparsed
            preds[pmid] = {"prediction": "garbled", "parse_failed": True}
            submitted[pmid] = UNANSWERED
        elif roll < 0.09:  # no record at all: the script still needs a line for it
            submitted[pmid] = UNANSWERED
        else:
            label = gold if roll < 0.6 else rng.choice(list(LETTER))
            preds[pmid], submitted[pmid] = {"prediction": LETTER[label]}, label
    (tmp_path / "data").mkdir()
    shutil.copy(shared_data / "pubmedqa" / "test_ground_truth.json", tmp_path / "data")
    (tmp_path / "predictions.json").write_text(json.dumps(submitted))
    out = subprocess.run(
        [sys.executable, str(official / "pubmedqa" / "evaluation.py"), "predictions.json"],
        cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    accuracy = re.search(r"Accuracy (\S+)", out)
    macro_f1 = re.search(r"Macro-F1 (\S+)", out)
    assert accuracy and macro_f1, out
    got = score_dataset("pubmedqa", items, preds, scoring="official")
    assert (got["n"], got["missing"]) == (500, sum(p not in preds for p in truth))
    assert f"{got['accuracy']:.6f}" == accuracy[1]
    assert f"{got['macro_f1']:.6f}" == macro_f1[1]
    # biorag's own variant averages macro-F1 over the three labels only: it differs here
    ours = score_dataset("pubmedqa", items, preds, scoring="biorag")
    assert f"{ours['macro_f1']:.6f}" != macro_f1[1]


def _mirage_module(official: Path, name: str) -> Any:
    """MIRAGE's ``name``.py loaded from ../shared/official/mirage as it is: no bytecode written
    there, and its sibling ``utils`` (which evaluate.py imports by that bare name) taken out of
    ``sys.modules`` again."""
    folder = str(official / "mirage")
    before = sys.modules.get("utils")
    sys.path.insert(0, folder)
    bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec = importlib.util.spec_from_file_location(f"mirage_{name}", f"{folder}/{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with warnings.catch_warnings():  # its regexes are plain strings ("\\s"): Python warns
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", SyntaxWarning)
            spec.loader.exec_module(module)
        return module
    finally:
        sys.dont_write_bytecode = bytecode
        sys.path.remove(folder)
        if before is None:
            sys.modules.pop("utils", None)
        else:
            sys.modules["utils"] = before


def _outputs(rng: random.Random, letter: str, text: str) -> str:
    """A model output of one of the shapes MIRAGE's reader meets."""
    shapes = [
        f'{{"step_by_step_thinking": "...", "answer_choice": "{letter}"}}',
        f'{{"answer_choice": "{letter}. {text}"}}',
        f"The answer is option {letter}.",
        f"Answer: {letter}",
        f"{letter} or {'B' if letter != 'B' else 'C'}",
        f"{letter}, because {text}",
        "I cannot tell from the passages.",
        "",
        f'"answer_choice": "({letter})"',
        f"OPTION {letter} is best",
    ]
    return rng.choice(shapes)


def test_mirage_scores_equal_its_own_evaluate(
    official: Path, shared_data: Path, tmp_path: Path
) -> None:
    utils = _mirage_module(official, "utils")
    evaluate = _mirage_module(official, "evaluate")
    subset = "pubmedqa"
    dataset = utils.QADataset(subset, dir=str(shared_data / "mirage"))
    items = load_dataset("mirage", shared_data / "mirage", split=subset).items
    assert len(items) == len(dataset)
    rng = random.Random(29)
    preds, save = {}, tmp_path / "prediction"
    save.mkdir()
    for item in items:
        letter = rng.choice(list(item.options))
        raw = _outputs(rng, letter, item.options[letter])
        qid = item.meta["qid"]
        (save / f"test_{qid}.json").write_text(json.dumps([raw]))
        # what a biorag run records: the letter it read, or nothing (and its raw output)
        read = re.search(r'"answer_choice": "([A-D])"', raw)
        preds[item.id] = {"prediction": read[1] if read else "", "raw_output": raw}
    acc, _std, flag = evaluate.evaluate(dataset, str(save))
    assert not flag
    got = score_dataset("mirage", items, preds, scoring="official")
    assert got["accuracy"] == pytest.approx(float(acc), abs=1e-12)
    # and the letter read from each output is the official reader's
    for raw in {p["raw_output"] for p in preds.values()}:
        official_letter = utils.locate_answer(raw.split('"answer_choice": "')[-1].strip())
        assert mirage_locate_answer(raw) == official_letter, raw


BIOASQ_GOLDEN = "mirage/rawdata/bioasq/Task11BGoldenEnriched/11B1_golden.json"
PUBMED = "http://www.ncbi.nlm.nih.gov/pubmed/"


def _bioasq_run(items: list[QAItem], rng: random.Random) -> tuple[dict, list[dict]]:
    """biorag's predictions for ``items`` (right, wrong, partly right, unanswered) and the same
    as a BioASQ submission."""
    preds: dict[str, dict[str, Any]] = {}
    submission = []
    others = [d for it in items for d in it.gold_docs]
    for it in items:
        roll = rng.random()
        docs = [d for d in it.gold_docs if rng.random() < 0.6] + rng.sample(others, 3)
        rng.shuffle(docs)
        docs = docs[:10]
        exact: Any
        if it.question_type == "yesno":
            label = it.options[it.gold]
            if roll < 0.1:
                exact, letter = "", ""
            else:
                exact = label if roll < 0.7 else ("no" if label == "yes" else "yes")
                letter = {v: k for k, v in it.options.items()}[exact]
            pred: Any = letter
        elif it.question_type == "factoid":
            right = [syn[0] for syn in it.gold][:1]
            cands = rng.sample(["unrelated", "not it", "wrong answer"], 2) + (
                right if roll < 0.7 else []
            )
            rng.shuffle(cands)
            pred, exact = cands, [[c] for c in cands]
        elif it.question_type == "list":
            got = [syn[0] for syn in it.gold if rng.random() < 0.6]
            pred = got + rng.sample(["wrong item", "another"], 1) + got[:1]  # a repeat
            exact = [[x] for x in pred]
        else:  # summary: documents only
            pred, exact = "", None
        preds[it.id] = {"prediction": pred, "documents": docs}
        row = {"id": it.id, "ideal_answer": "", "documents": [PUBMED + d for d in docs],
               "snippets": []}  # fmt: skip
        if exact is not None:
            row["exact_answer"] = exact
        submission.append(row)
    return preds, submission


def _bioasq_jar(official: Path, phase: str, golden: Path, system: Path) -> dict[str, float]:
    jar = official / "bioasq"
    out = subprocess.run(
        ["java", "-cp", f"{jar / 'BioASQEvaluation.jar'}:{jar / 'lib'}/*",
         "evaluation.EvaluatorTask1b", phase, "-e", "9", str(golden), str(system), "-verbose"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    return {k.strip(): float(v) for k, v in re.findall(r"^([A-Za-z][^:\n]*): (\S+)$", out, re.M)}


def test_bioasq_scores_equal_its_own_evaluation_jar(
    official: Path, shared_data: Path, tmp_path: Path
) -> None:
    if shutil.which("java") is None:
        pytest.skip("no Java runtime to run the BioASQ evaluator (apt-get install default-jre)")
    golden = shared_data / BIOASQ_GOLDEN
    items = list(load_dataset("bioasq", golden).items)
    preds, submission = _bioasq_run(items, random.Random(29))
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"questions": submission}))
    b = _bioasq_jar(official, "-phaseB", golden, system)
    a = _bioasq_jar(official, "-phaseA", golden, system)
    got = score_dataset("bioasq", items, preds, scoring="official")
    pairs = {
        "YesNo Acc": got["yesno"]["accuracy"],
        "YesNo macroF1": got["yesno"]["macro_f1"],
        "YesNo F1 yes": got["yesno"]["f1_yes"],
        "YesNo F1 no": got["yesno"]["f1_no"],
        "Factoid Strict Acc": got["factoid"]["strict_accuracy"],
        "Factoid Lenient Acc": got["factoid"]["lenient_accuracy"],
        "Factoid MRR": got["factoid"]["mrr"],
        "List Prec": got["list"]["precision"],
        "List Rec": got["list"]["recall"],
        "List F1": got["list"]["f1"],
        "MPrec documents": got["documents"]["precision"],
        "MRec documents": got["documents"]["recall"],
        "MF1 documents": got["documents"]["f1"],
        "MAP documents": got["documents"]["map"],
        "GMAP documents": got["documents"]["gmap"],
    }
    jar = {**a, **b}
    assert {k: jar[k] for k in pairs} == pytest.approx(pairs, abs=1e-9)


def test_bioasq_map_above_one_for_more_than_ten_documents_as_the_jar_gives(
    official: Path, shared_data: Path
) -> None:
    """The evaluator divides AP by min(|gold|, 10) but does not cut a submission at 10: the
    golden file submitted as a run scores a MAP above 1. Official scoring says the same."""
    if shutil.which("java") is None:
        pytest.skip("no Java runtime to run the BioASQ evaluator (apt-get install default-jre)")
    golden = shared_data / BIOASQ_GOLDEN
    items = list(load_dataset("bioasq", golden).items)
    jar = _bioasq_jar(official, "-phaseA", golden, golden)
    preds = {it.id: {"prediction": "", "documents": it.gold_docs} for it in items}
    got = score_dataset("bioasq", items, preds, scoring="official")["documents"]
    assert jar["MAP documents"] > 1
    assert (got["map"], got["gmap"]) == pytest.approx(
        (jar["MAP documents"], jar["GMAP documents"]), abs=1e-12
    )
