"""One question model: a benchmark item is a Question, and a method is given only the question."""

from __future__ import annotations

from biorag.corpus.datasets.base import QAItem, Question


def test_a_benchmark_item_is_a_question_and_methods_get_it_without_its_gold():
    item = QAItem(
        id="b1",
        dataset="bioasq",
        question="Which gene is mutated in cystic fibrosis?",
        context=["CFTR mutations cause cystic fibrosis."],
        question_type="factoid",
        gold=[["CFTR"]],
        gold_docs=["123"],
    )
    assert isinstance(item, Question)
    assert item.text == item.question and item.passages == item.context
    assert item.type == "factoid"  # the answer type follows the benchmark's question type
    q = item.as_question()
    assert type(q) is Question and q.text == item.text and q.passages == item.passages
    assert not hasattr(q, "gold") and "gold" not in q.model_dump()
    mc = QAItem(id="m", dataset="medqa", text="Which?", options={"A": "x"}, gold="A")
    assert mc.type == "" and mc.as_question().options == {"A": "x"}
