"""``--scoring official`` against the benchmarks' own evaluators, run as their authors published
them from ``../shared/official/`` (never copied in): PubMedQA's ``evaluation.py`` as a script
on the whole test set, and MIRAGE's ``evaluate.py`` as a script on all five subsets (and its
``evaluate`` and ``locate_answer`` in process, for every digit). The predictions mix right,
wrong, unanswered and unparsed answers, so the edge cases where ``official`` and ``biorag``
scoring part are in the comparison. The BioASQ jar: tests/eval/test_official_bioasq.py.
Skipped without ../shared; failed instead where BIORAG_REQUIRE_OFFICIAL=1 (CI) and ../shared is
there but its evaluators are not."""

from __future__ import annotations

import importlib.util
import json
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from tests.eval.official_tools import official_dir, pubmedqa_script

from biorag.answer.locate import mirage_locate_answer
from biorag.corpus.datasets import load_dataset
from biorag.corpus.datasets.base import QAItem
from biorag.eval.metrics import score_dataset
from biorag.eval.metrics.official import UNANSWERED

YNM = {"A": "yes", "B": "no", "C": "maybe"}
LETTER = {"yes": "A", "no": "B", "maybe": "C"}
MIRAGE_SUBSETS = ("mmlu", "medqa", "medmcqa", "pubmedqa", "bioasq")  # evaluate.py's order


@pytest.fixture
def official() -> Path:
    return official_dir()


def pubmedqa_run(truth: dict[str, str], seed: int = 29) -> tuple[list, dict, dict]:
    """The test questions, biorag's predictions (right, wrong, unanswered, unparsed, missing,
    given as letters or as label texts) and the same as the script's ``{pmid: label}``."""
    rng = random.Random(seed)
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
            said = label.capitalize() if roll > 0.95 else LETTER[label]  # a text, or a letter
            preds[pmid], submitted[pmid] = {"prediction": said}, label
    return items, preds, submitted


def test_pubmedqa_scores_equal_its_own_evaluation_script(
    official: Path, shared_data: Path, tmp_path: Path
) -> None:
    truth_file = shared_data / "pubmedqa" / "test_ground_truth.json"
    truth = json.loads(truth_file.read_text())
    items, preds, submitted = pubmedqa_run(truth)
    (tmp_path / "predictions.json").write_text(json.dumps(submitted))
    printed = pubmedqa_script(tmp_path / "predictions.json", truth_file, tmp_path)
    got = score_dataset("pubmedqa", items, preds, scoring="official")
    assert (got["n"], got["missing"]) == (500, sum(p not in preds for p in truth))
    assert f"{got['accuracy']:.6f}" == printed["Accuracy"]  # the script prints %f
    assert f"{got['macro_f1']:.6f}" == printed["Macro-F1"]
    # biorag's own variant averages macro-F1 over the three labels only: it differs here
    ours = score_dataset("pubmedqa", items, preds, scoring="biorag")
    assert f"{ours['macro_f1']:.6f}" != printed["Macro-F1"]


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
        f'{{"answer_choice": "{letter.lower()}"}}',  # lower case: no rule matches
        f"{letter}/{text}",
    ]
    return rng.choice(shapes)


def mirage_run(items: list[QAItem], rng: random.Random) -> tuple[dict, dict[str, str]]:
    """biorag's records for ``items`` (the letter its reader took, or nothing, with the raw
    output; some marked unparseable) and each question's raw output for MIRAGE's files."""
    preds, outputs = {}, {}
    for item in items:
        letter = item.gold if rng.random() < 0.5 else rng.choice(list(item.options))
        raw = _outputs(rng, letter, item.options[letter])
        outputs[item.id] = raw
        # what a biorag run records: the letter it read, or nothing (and its raw output)
        read = re.search(r'"answer_choice": "([A-D])"', raw)
        preds[item.id] = {"prediction": read[1] if read else "", "raw_output": raw}
        if not read and rng.random() < 0.5:
            preds[item.id].update(prediction="garbled", parse_failed=True)
    return preds, outputs


def test_mirage_scores_equal_its_own_evaluate_on_every_subset(
    official: Path, shared_data: Path, tmp_path: Path
) -> None:
    """evaluate.py run as a script over the five subsets prints each subset's accuracy and
    their mean to 4 decimals; its ``evaluate`` in process gives every digit."""
    items = load_dataset("mirage", shared_data / "mirage").items
    assert {it.subset for it in items} == set(MIRAGE_SUBSETS)
    preds, outputs = mirage_run(items, random.Random(29))
    results = tmp_path / "prediction"
    for it in items:  # the script's layout: SUBSET/cot/LLM/SPLIT_QID.json
        split = "dev" if it.subset == "medmcqa" else "test"
        folder = results / str(it.subset) / "cot" / "biorag"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{split}_{it.meta['qid']}.json").write_text(json.dumps([outputs[it.id]]))
    (tmp_path / "benchmark.json").symlink_to(shared_data / "mirage" / "benchmark.json")
    out = subprocess.run(
        [sys.executable, "-B", "-W", "ignore", str(official / "mirage" / "evaluate.py"),
         "--results_dir", str(results), "--llm_name", "biorag"],
        cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    printed = dict(re.findall(r"^\[(\w+)\] mean acc: ([0-9.]+)", out, re.M))
    assert set(printed) == {*MIRAGE_SUBSETS, "Average"}, out
    got = score_dataset("mirage", items, preds, scoring="official")
    assert got["missing"] == 0 and got["unparseable"] > 0
    ours = {s: f"{got['per_subset'][s]['accuracy']:.4f}" for s in MIRAGE_SUBSETS}
    assert ours == {s: printed[s] for s in MIRAGE_SUBSETS}
    assert f"{got['accuracy']:.4f}" == printed["Average"]  # the mean of the five
    # every digit, from its evaluate() on each subset's folder
    utils = _mirage_module(official, "utils")
    evaluate = _mirage_module(official, "evaluate")
    for subset in MIRAGE_SUBSETS:
        dataset = utils.QADataset(subset, dir=str(shared_data / "mirage"))
        folder = results / subset / "cot" / "biorag"
        split = "dev" if subset == "medmcqa" else "test"
        acc, _std, flag = evaluate.evaluate(dataset, str(folder), split)
        assert not flag
        assert got["per_subset"][subset]["accuracy"] == float(acc), subset
    # and the letter read from each output is the official reader's
    for raw in set(outputs.values()):
        official_letter = utils.locate_answer(raw.split('"answer_choice": "')[-1].strip())
        assert mirage_locate_answer(raw) == official_letter, raw
    # biorag's variant pools the questions: another number than the mean of the subsets
    pooled = score_dataset("mirage", items, preds, scoring="biorag")["accuracy"]
    assert f"{pooled:.4f}" != printed["Average"]
