"""``--scoring official`` against the BioASQ Task B evaluation jar itself (``-phaseA``/``-phaseB
-e 9``, run from ../shared/official), on every 2023 (11b) batch and on one 2019 (7b) batch, with
every question type and the edge cases where readings part: unanswered and unparseable answers,
more than five factoid candidates, gold synonyms, submitted synonyms, padded and upper-case
answers, repeated list items, repeated and surplus documents, overlapping, touching and
misplaced snippets. Each measure is compared with the value the jar prints. Skipped without
../shared or Java; failed instead where BIORAG_REQUIRE_OFFICIAL=1 (CI) and ../shared is there."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from tests.eval.official_tools import (
    BIOASQ_PHASE_A,
    BIOASQ_PHASE_B,
    PUBMED,
    bioasq_jar,
    differences,
)

from biorag.corpus.datasets import load_dataset
from biorag.eval.metrics import score_dataset

BIOASQ = "mirage/rawdata/bioasq"
BATCHES = [f"Task11BGoldenEnriched/11B{i}_golden.json" for i in range(1, 5)] + [
    "Task7BGoldenEnriched/7B1_golden.json"
]
WRONG = ["unrelated", "not it", "wrong answer", "another thing", "nothing", "zzz", "qqq"]


def _yesno(case: int, gold: str) -> tuple[Any, Any]:
    """(biorag's prediction, the submitted exact answer; ``...`` = none submitted)."""
    other = "no" if gold == "yes" else "yes"
    letter = {"yes": "A", "no": "B"}
    return [
        (letter[gold], gold),  # right
        (letter[other], other),  # wrong
        ("", ""),  # unanswered: an empty answer
        (None, ...),  # unparseable: nothing submitted
        (f"{gold.capitalize()}, it does.", f"{gold.capitalize()}, it does."),  # free text
        ("unknown", "unknown"),  # read as "no" by the jar ("no" is in it)
    ][case % 6]


def _factoid(case: int, gold: list[list[str]]) -> tuple[Any, Any]:
    right, syn = gold[0][0], gold[0][-1]  # a gold synonym other than the first, where any
    w = WRONG
    preds: list[Any] = [
        [right, w[0]],  # right first
        [w[0], w[1], right],  # right third
        [*w[:6], right],  # right seventh: past the five candidates allowed
        [w[0], syn],  # a gold synonym
        [[w[0], right], w[1]],  # submitted synonyms: only the first counts
        [],  # unanswered
        None,  # unparseable
        [right.upper(), w[1]],  # upper case
        [f" {right} ", w[1]],  # padded with spaces
        [[], right],  # an empty candidate first
    ]
    pred = preds[case % len(preds)]
    if pred is None:
        return None, ...
    return pred, [x if isinstance(x, list) else [x] for x in pred]


def _list(case: int, gold: list[list[str]], rng: random.Random) -> tuple[Any, Any]:
    firsts = [g[0] for g in gold]
    some = [f for f in firsts if rng.random() < 0.6] or firsts[:1]
    preds: list[Any] = [
        [*some, WRONG[0], some[0]],  # some right, a wrong one, a repeat
        list(firsts),  # all right
        [firsts[0]] * 3,  # one item three times
        [g[-1] for g in gold],  # gold synonyms
        [[WRONG[0], firsts[0]], *firsts[1:]],  # submitted synonyms
        [],  # unanswered
        None,  # unparseable
        [*firsts, *firsts],  # everything twice
        ["", *some],  # an empty entry
    ]
    pred = preds[case % len(preds)]
    if pred is None:
        return None, ...
    return pred, [x if isinstance(x, list) else [x] for x in pred]


def _documents(case: int, gold: list[str], others: list[str], rng: random.Random) -> list[str]:
    hits = [d for d in gold if rng.random() < 0.6]
    docs = hits + rng.sample(others, 3)
    rng.shuffle(docs)
    return [
        docs[:10],
        docs + docs[:2],  # repeated documents
        rng.sample(others, 12) + gold[:3],  # more than ten
        [],  # none
        gold[:1] * 3 + docs[:4],  # the first gold document three times
    ][case % 5]


def _snippets(case: int, gold: list[dict], others: list[str], rng: random.Random) -> list[dict]:
    def span(sn: dict, begin: int, end: int, doc: str | None = None) -> dict:
        return {"document": doc or sn["document"], "section": sn["section"],
                "begin": begin, "end": end}  # fmt: skip

    out = []
    for sn in gold[: 1 + case % 4]:
        b, e = sn["begin"], sn["end"]
        out += [
            [span(sn, b, e)],  # exact
            [span(sn, b + (e - b) // 2, e + 40)],  # overlapping
            [span(sn, b, b + 10), span(sn, b + 5, b + 30)],  # overlapping each other
            [span(sn, e, e + 20)],  # touching at the end
            [span(sn, b, e, rng.choice(others))],  # another article
            [span(sn, e + 500, e + 600)],  # its article, elsewhere
        ][rng.randrange(6)]
    return [] if case % 7 == 6 else out


def bioasq_run(golden: Path, seed: int = 29) -> tuple[list[Any], dict[str, dict], list[dict]]:
    """The questions of ``golden``, biorag's predictions for them (every edge case of the
    module docstring, by turns) and the same as a BioASQ submission."""
    rng = random.Random(seed)
    items = list(load_dataset("bioasq", golden).items)
    raw = {q["id"]: q for q in json.loads(golden.read_text())["questions"]}
    others = sorted({d for it in items for d in it.gold_docs})
    preds: dict[str, dict[str, Any]] = {}
    submission = []
    turn: dict[str, int] = {}
    for it in items:
        case = turn[it.question_type] = turn.get(it.question_type, -1) + 1
        if it.question_type == "yesno":
            pred, exact = _yesno(case, it.options[it.gold])
        elif it.question_type == "factoid":
            pred, exact = _factoid(case, it.gold)
        elif it.question_type == "list":
            pred, exact = _list(case, it.gold, rng)
        else:
            pred, exact = "", ...
        docs = _documents(case, it.gold_docs, others, rng)
        gold_snippets = [
            {"document": s["document"].rsplit("/", 1)[-1], "section": s["beginSection"],
             "begin": s["offsetInBeginSection"], "end": s["offsetInEndSection"]}
            for s in raw[it.id]["snippets"]
        ]  # fmt: skip
        snippets = _snippets(case, gold_snippets, others, rng)
        entry: dict[str, Any] = {"prediction": "" if pred is None else pred, "documents": docs,
                                 "snippets": snippets}  # fmt: skip
        if pred is None:
            entry["parse_failed"] = True
        preds[it.id] = entry
        row: dict[str, Any] = {
            "id": it.id, "type": it.question_type, "body": it.text, "ideal_answer": "",
            "documents": [PUBMED + d for d in docs],
            "snippets": [
                {"document": PUBMED + s["document"], "beginSection": s["section"],
                 "endSection": s["section"], "offsetInBeginSection": s["begin"],
                 "offsetInEndSection": s["end"], "text": ""}
                for s in snippets
            ],
        }  # fmt: skip
        if exact is not ...:
            row["exact_answer"] = exact
        submission.append(row)
    return items, preds, submission


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: Path(b).stem.split("_")[0])
def test_bioasq_scores_equal_the_jars_on_every_batch(
    shared_data: Path, tmp_path: Path, batch: str
) -> None:
    golden = shared_data / BIOASQ / batch
    items, preds, submission = bioasq_run(golden)
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"questions": submission}))
    jar = {**bioasq_jar("-phaseA", golden, system), **bioasq_jar("-phaseB", golden, system)}
    got = score_dataset("bioasq", items, preds, scoring="official")
    assert differences(jar, got, {**BIOASQ_PHASE_A, **BIOASQ_PHASE_B}) == {}
    # biorag's variants (answers stripped, every synonym, five candidates, ten documents,
    # exclusive snippet ends, exact yes/no words) read these edge cases otherwise
    ours = score_dataset("bioasq", items, preds, scoring="biorag")
    assert set(differences(jar, ours, {**BIOASQ_PHASE_A, **BIOASQ_PHASE_B})) >= {
        "YesNo Acc", "Factoid MRR", "List F1", "MAP documents", "MF1 snippets"
    }  # fmt: skip


def test_bioasq_map_above_one_for_more_than_ten_documents_as_the_jar_gives(
    shared_data: Path,
) -> None:
    """The evaluator divides AP by min(|gold|, 10) but does not cut a submission at 10: the
    golden file submitted as a run scores a MAP above 1. Official scoring says the same."""
    golden = shared_data / BIOASQ / BATCHES[0]
    items = list(load_dataset("bioasq", golden).items)
    jar = bioasq_jar("-phaseA", golden, golden)
    preds = {
        it.id: {"prediction": "", "documents": it.gold_docs,
                "snippets": it.meta["gold_snippets_official"]}
        for it in items
    }  # fmt: skip
    got = score_dataset("bioasq", items, preds, scoring="official")
    assert float(jar["MAP documents"]) > 1
    assert differences(jar, got, BIOASQ_PHASE_A) == {}


def test_a_question_submitted_without_snippets_scores_zero_as_the_jars(
    shared_data: Path, tmp_path: Path
) -> None:
    """The jar scores every question with gold snippets, one whose answer has no snippets as
    none found (0); a prediction without a snippet list is scored so too, not left out."""
    golden = shared_data / BIOASQ / BATCHES[0]
    items, preds, submission = bioasq_run(golden)
    for row in submission[::5]:
        del row["snippets"]
        del preds[row["id"]]["snippets"]
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"questions": submission}))
    jar = bioasq_jar("-phaseA", golden, system)
    got = score_dataset("bioasq", items, preds, scoring="official")
    assert differences(jar, got, BIOASQ_PHASE_A) == {}
