"""The edge cases that separate ``scoring="official"`` from ``biorag``, worked by hand from each
evaluator's source. The evaluators themselves (PubMedQA's script, the BioASQ jar, MIRAGE's
``evaluate``) run against biorag's scores in tests/eval/test_official_evaluators.py."""

from __future__ import annotations

import pytest
from sklearn.metrics import accuracy_score, f1_score

from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.metrics import score_dataset

YNM = {"A": "yes", "B": "no", "C": "maybe"}
LETTER = {"yes": "A", "no": "B", "maybe": "C"}
# (pmid, gold, prediction): None = unanswered; "FAIL" = parse failed; "MISSING" = no record
PUBMEDQA_RUN = [
    ("101", "yes", "yes"),
    ("102", "yes", "no"),
    ("103", "yes", None),
    ("104", "no", "no"),
    ("105", "no", "no"),
    ("106", "maybe", None),
    ("107", "maybe", "FAIL"),
    ("108", "yes", "MISSING"),
    ("109", "no", "maybe"),
    ("110", "yes", "yes"),
]


def _pubmedqa():
    items = [
        QAItem(
            id=p,
            dataset="pubmedqa",
            question=f"q{p}",
            options=YNM,
            gold=LETTER[g],
            question_type="yesno",
        )
        for p, g, _ in PUBMEDQA_RUN
    ]
    preds = {}
    for p, _, pred in PUBMEDQA_RUN:
        if pred == "MISSING":
            continue
        if pred == "FAIL":
            preds[p] = {"prediction": "garbled", "parse_failed": True}
        else:
            preds[p] = {"prediction": "" if pred is None else LETTER[pred]}
    return items, preds


def _official_pubmedqa_script(ground_truth: dict[str, str], predictions: dict[str, str]):
    """PubMedQA's evaluation.py restated (all pmids predicted); the script itself runs in
    test_official_evaluators.py."""
    assert set(ground_truth) == set(predictions)
    pmids = list(ground_truth)
    truth = [ground_truth[p] for p in pmids]
    preds = [predictions[p] for p in pmids]
    return accuracy_score(truth, preds), f1_score(truth, preds, average="macro")


def test_pubmedqa_official_equals_the_official_script_to_the_last_digit():
    items, preds = _pubmedqa()
    got = score_dataset("pubmedqa", items, preds)
    assert got["scoring"] == "official"
    # an unanswered question must still be submitted to the script: any placeholder label
    submitted = {p: (pred if pred in LETTER else "unanswered") for p, _, pred in PUBMEDQA_RUN}
    acc, maf = _official_pubmedqa_script({p: g for p, g, _ in PUBMEDQA_RUN}, submitted)
    assert got["accuracy"] == acc and got["macro_f1"] == maf


def test_pubmedqa_official_and_biorag_differ_where_questions_go_unanswered():
    items, preds = _pubmedqa()
    official = score_dataset("pubmedqa", items, preds, scoring="official")["macro_f1"]
    ours = score_dataset("pubmedqa", items, preds, scoring="biorag")["macro_f1"]
    # by hand: yes F1 4/7, no F1 2/3, maybe F1 0, and (official only) the unanswered class 0
    assert official == pytest.approx((4 / 7 + 2 / 3) / 4, abs=1e-12)
    assert ours == pytest.approx((4 / 7 + 2 / 3) / 3, abs=1e-12)
    # with every question answered the two modes agree
    answered = {p: {"prediction": LETTER[g]} for p, g, _ in PUBMEDQA_RUN}
    a = score_dataset("pubmedqa", items, answered, scoring="official")
    b = score_dataset("pubmedqa", items, answered, scoring="biorag")
    assert a["macro_f1"] == b["macro_f1"] == 1.0


def test_mirage_official_averages_subsets_biorag_pools():
    opts = {"A": "a", "B": "b", "C": "c", "D": "d"}
    items = [QAItem(id=f"s{i}", dataset="mirage", question="q", options=opts, gold="A",
                    subset="small") for i in range(2)]  # fmt: skip
    items += [QAItem(id=f"b{i}", dataset="mirage", question="q", options=opts, gold="A",
                     subset="big") for i in range(4)]  # fmt: skip
    preds = {"s0": "A", "s1": "B", "b0": "A", "b1": "A", "b2": "A", "b3": "A"}
    official = score_dataset("mirage", items, preds)
    assert official["accuracy"] == pytest.approx((0.5 + 1.0) / 2)
    assert official["accuracy_pooled"] == pytest.approx(5 / 6)
    assert score_dataset("mirage", items, preds, scoring="biorag")["accuracy"] == pytest.approx(
        5 / 6
    )


def test_unknown_scoring_mode_is_a_clear_error():
    items, preds = _pubmedqa()
    with pytest.raises(BioragError, match="scoring must be one of official, biorag"):
        score_dataset("pubmedqa", items, preds, scoring="lenient")


def _bioasq(qtype: str, gold, qid: str = "q", docs=()):
    yn = {"A": "yes", "B": "no"} if qtype == "yesno" else {}
    return QAItem(id=qid, dataset="bioasq", question="?", options=yn, gold=gold,
                  question_type=qtype, gold_docs=list(docs))  # fmt: skip


def test_bioasq_official_reads_answers_as_the_organisers_evaluator():
    # yes/no: the official reader maps any answer containing "yes" (else "no") to that label
    items = [_bioasq("yesno", "B", "y1"), _bioasq("yesno", "A", "y2")]
    preds = {"y1": "I do not know", "y2": "yes, it does"}
    assert score_dataset("bioasq", items, preds)["yesno"]["accuracy"] == 1.0
    assert score_dataset("bioasq", items, preds, scoring="biorag")["yesno"]["accuracy"] == 0.0
    # factoid: every submitted candidate counts (no cut at 5); free text is one candidate
    fact = [_bioasq("factoid", [["IL-6"]], "f1"), _bioasq("factoid", [["TNF"]], "f2")]
    six = ["a", "b", "c", "d", "e", "il-6"]
    official = score_dataset("bioasq", fact, {"f1": six, "f2": "IL-1\nTNF"})["factoid"]
    assert official == pytest.approx(
        {"strict_accuracy": 0.0, "lenient_accuracy": 0.5, "mrr": (1 / 6) / 2, "n": 2}
    )
    ours = score_dataset("bioasq", fact, {"f1": six, "f2": "IL-1\nTNF"}, scoring="biorag")
    assert ours["factoid"] == pytest.approx(
        {"strict_accuracy": 0.0, "lenient_accuracy": 0.5, "mrr": 0.25, "n": 2}
    )
    # list: a free-text answer is one entry (no splitting at line breaks)
    lst = [_bioasq("list", [["BRCA1"], ["BRCA2"]], "l1")]
    assert score_dataset("bioasq", lst, {"l1": "BRCA1\nBRCA2"})["list"]["f1"] == 0.0
    assert score_dataset("bioasq", lst, {"l1": "BRCA1\nBRCA2"}, scoring="biorag")["list"][
        "f1"
    ] == pytest.approx(1.0)


def test_bioasq_official_reads_only_the_first_synonym_of_a_submitted_entry():
    # the -e 8/9 reader keeps each submitted entry's first synonym; gold keeps all of its own
    fact = [_bioasq("factoid", [["il-6", "interleukin 6"]], "f1")]
    entry = {"f1": [["interleukin-6 receptor", "IL-6"], ["Interleukin 6"]]}
    official = score_dataset("bioasq", fact, entry)["factoid"]
    assert official == pytest.approx(
        {"strict_accuracy": 0.0, "lenient_accuracy": 1.0, "mrr": 0.5, "n": 1}
    )
    ours = score_dataset("bioasq", fact, entry, scoring="biorag")["factoid"]
    assert ours["strict_accuracy"] == 1.0  # biorag counts every synonym
    # the reader drops an empty entry (it holds no rank), not an empty string; lower-casing
    # is the only normalisation (the jar agrees: tests/eval/test_official_bioasq.py)
    gaps = {"f1": [[], ["IL-6"], ["il-6 "]]}
    assert score_dataset("bioasq", fact, gaps)["factoid"]["mrr"] == 1.0
    assert score_dataset("bioasq", fact, {"f1": [[""], ["IL-6"]]})["factoid"]["mrr"] == 0.5
    spaced = {"f1": [["IL-6 "]]}
    assert score_dataset("bioasq", fact, spaced)["factoid"]["lenient_accuracy"] == 0.0
    assert score_dataset("bioasq", fact, spaced, scoring="biorag")["factoid"]["mrr"] == 1.0
    # list: an empty string is a false positive, a repeated entry too; an empty entry is not
    lst = [_bioasq("list", [["BRCA1"], ["BRCA2"]], "l1")]
    got = score_dataset("bioasq", lst, {"l1": [["brca1"], [], [""], ["BRCA1"], ["brca2", "x"]]})
    assert got["list"]["precision"] == pytest.approx(2 / 4)
    assert got["list"]["recall"] == pytest.approx(1.0)


def test_bioasq_official_documents_count_every_submitted_id_once():
    gold = [str(i) for i in range(3)]
    items = [_bioasq("summary", "ideal", "d1", docs=gold)]
    # 12 ids, a repeat among them, the second gold one at rank 12
    sub = ["0", "0", *[f"x{i}" for i in range(9)], "1"]
    official = score_dataset("bioasq", items, {"d1": {"prediction": "", "documents": sub}})
    ours = score_dataset("bioasq", items, {"d1": {"prediction": "", "documents": sub}},
                         scoring="biorag")  # fmt: skip
    # official: the reader drops the repeat: 11 ids, TP = 2 (0, 1), FN = 1 (2), no cut at 10;
    # AP = (1/1 + 2/11) / min(3, 10)
    assert official["documents"]["precision"] == pytest.approx(2 / 11)
    assert official["documents"]["recall"] == pytest.approx(2 / 3)
    assert official["documents"]["map"] == pytest.approx((1 + 2 / 11) / 3)
    # biorag: duplicates dropped, cut at 10 submitted: TP = 1 of 10; recall 1/3
    assert ours["documents"]["precision"] == pytest.approx(1 / 10)
    assert ours["documents"]["recall"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("output", "letter"),
    [
        ('{"step_by_step_thinking": "...", "answer_choice": "B"}', "B"),
        ("C", "C"),
        ("D, because it is the only one", "D"),
        ("The best is option C here", "C"),
        ("Answer: B", "B"),
        ("I cannot decide between them", "A"),  # no rule matches: MIRAGE answers A
        ("", "A"),
    ],
)
def test_mirage_locate_answer_rules(output, letter):
    from biorag.eval.metrics.official import mirage_locate_answer

    assert mirage_locate_answer(output) == letter


def test_mirage_official_reads_unparsed_outputs_as_locate_answer_does():
    opts = {"A": "a", "B": "b", "C": "c", "D": "d"}
    items = [QAItem(id=f"q{i}", dataset="mirage", question="q", options=opts, gold=g,
                    subset="medqa") for i, g in enumerate("ABC")]  # fmt: skip
    preds = {
        "q0": {"prediction": "", "parse_failed": True, "raw_output": "no idea"},  # -> A: right
        "q1": {"prediction": "", "parse_failed": True, "raw_output": 'x "answer_choice": "B"'},
        "q2": {"prediction": "C"},
    }
    assert score_dataset("mirage", items, preds)["accuracy"] == 1.0
    assert score_dataset("mirage", items, preds, scoring="biorag")["accuracy"] == pytest.approx(
        1 / 3
    )
