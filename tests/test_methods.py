"""The ask methods with the scripted mock LLM and with the no-LLM floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biorag.config import Settings
from biorag.errors import BioragError
from biorag.methods.base import Question
from biorag.methods.registry import build_method
from biorag.runtime import Runtime

OPTS = {"A": "insulin", "B": "atorvastatin", "C": "penicillin"}


def mock_settings(tmp_path: Path, rules: list[dict]) -> Settings:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(rules))
    return Settings.model_validate(
        {
            "home": str(tmp_path / "home"),
            "llm": {"backend": "mock", "mock_script": str(script), "cache": False},
        }
    )


def test_closed_book_two_calls_and_accounting(tmp_path):
    rt = Runtime(
        mock_settings(
            tmp_path,
            [
                {"stage": "answer", "response": "Statins lower LDL, so atorvastatin."},
                {"stage": "answer_extract", "response": '{"answer": "B"}'},
            ],
        )
    )
    ans = build_method("closed-book", rt).answer_sync(
        Question(text="Which drug lowers LDL?", options=OPTS)
    )
    assert ans.answer == "B" and ans.answer_text == "atorvastatin"
    assert not ans.parse_failed and ans.llm_used
    stages = rt.accounting()["stages"]
    assert stages["answer"]["calls"] == 1 and stages["answer_extract"]["calls"] == 1


def test_unparseable_letter_is_reported_not_guessed(tmp_path):
    rt = Runtime(
        mock_settings(
            tmp_path,
            [
                {"stage": "answer", "response": "I am not sure."},
                {"stage": "answer_extract", "response": "the second one, probably"},
            ],
        )
    )
    ans = build_method("closed-book", rt).answer_sync(Question(text="q?", options=OPTS))
    assert ans.parse_failed and ans.answer == ""


def test_lenient_letter_parsing(tmp_path):
    rt = Runtime(
        mock_settings(
            tmp_path,
            [
                {"stage": "answer", "response": "C it is."},
                {"stage": "answer_extract", "response": 'Sure! ```json\n{"answer": "c"}\n```'},
            ],
        )
    )
    ans = build_method("closed-book", rt).answer_sync(Question(text="q?", options=OPTS))
    assert ans.answer == "C" and not ans.parse_failed


def test_unknown_method_is_a_clear_error(tmp_path):
    with pytest.raises(BioragError, match="unknown method 'nope'; available"):
        build_method("nope", Runtime(Settings()))


def test_closed_book_open_question_without_llm_is_recorded_unanswered():
    rt = Runtime(Settings())
    ans = build_method("closed-book", rt).answer_sync(Question(text="Why?", type="summary"))
    assert ans.answer == "" and ans.parse_failed and not ans.llm_used
    assert "no evidence to answer from" in ans.notes[0]


def test_closed_book_answers_open_questions_with_an_exact_answer(tmp_path):
    """IP-RAR's "w/o retrieval" ablation on BioASQ: a factoid question gets a free-text answer
    from the model's knowledge (no passages, no citations) and then its exact answer."""
    rt = Runtime(
        mock_settings(
            tmp_path,
            [
                {"stage": "answer", "match": "own knowledge",
                 "response": "BRCA1 and BRCA2 mutations raise the risk of breast cancer."},
                {"stage": "exact_answer", "response": '{"answer": ["BRCA1", "BRCA2"]}'},
            ],
        )
    )  # fmt: skip
    q = Question(text="Which genes raise breast cancer risk?", type="factoid")
    ans = build_method("closed-book", rt).answer_sync(q)
    assert ans.answer.startswith("BRCA1 and BRCA2") and ans.llm_used and not ans.parse_failed
    assert ans.exact == ["BRCA1", "BRCA2"]
    assert [s.chunk_ids for s in ans.sentences] == [[]]  # nothing retrieved, nothing cited
    stages = rt.accounting()["stages"]
    assert stages["answer"]["calls"] == 1 and stages["exact_answer"]["calls"] == 1
    summary = build_method("closed-book", rt).answer_sync(
        Question(text="Describe X.", type="summary")
    )
    assert summary.answer and summary.exact is None  # a summary has no exact answer


def _indexed_runtime(tmp_path, corpus_file, emb, settings: Settings) -> Runtime:
    from biorag.corpus.loaders import load_corpus
    from biorag.retrieve.index import IndexDir

    idx = IndexDir(tmp_path / "idx", emb)
    idx.add(load_corpus(corpus_file))
    idx.close()
    return Runtime(settings, [tmp_path / "idx"], embedder=emb)  # a fast test embedder


def test_retrieve_read_with_mock_llm_sees_the_evidence(tmp_path, corpus_file, hash_embedder):
    settings = mock_settings(
        tmp_path,
        [
            {"stage": "answer", "match": "Atorvastatin lowers LDL", "response": "B, the statin."},
            {"stage": "answer_extract", "response": '{"answer": "B"}'},
        ],
    )
    rt = _indexed_runtime(tmp_path, corpus_file, hash_embedder, settings)
    ans = build_method("retrieve-read", rt, {"k": 2}).answer_sync(
        Question(text="Which drug lowers LDL cholesterol?", options=OPTS)
    )
    rt.close()
    assert ans.answer == "B"
    assert ans.evidence and ans.evidence[0].source_id == "1002"
    assert len(ans.evidence) == 2


def test_free_text_answer_maps_citations_to_chunks(tmp_path, corpus_file, hash_embedder):
    settings = mock_settings(
        tmp_path,
        [
            {
                "stage": "answer",
                "response": "Atorvastatin lowers LDL cholesterol [1]. It reduces infarction risk "
                "[1][2]. Nothing else is known [9].",
            }
        ],
    )
    rt = _indexed_runtime(tmp_path, corpus_file, hash_embedder, settings)
    ans = build_method("retrieve-read", rt, {"k": 2}).answer_sync(
        Question(text="What does atorvastatin do to LDL cholesterol?")
    )
    rt.close()
    ids = [e.chunk_id for e in ans.evidence]
    assert [s.chunk_ids for s in ans.sentences] == [[ids[0]], [ids[0], ids[1]], []]
    assert ans.sentences[0].text == "Atorvastatin lowers LDL cholesterol."


def test_retrieve_read_floor_without_llm(tmp_path, corpus_file, hash_embedder):
    rt = _indexed_runtime(tmp_path, corpus_file, hash_embedder, Settings(home=str(tmp_path)))
    ans = build_method("retrieve-read", rt).answer_sync(
        Question(
            text="Does vitamin D reduce fracture risk?",
            options={"A": "yes", "B": "no", "C": "maybe"},
        )
    )
    rt.close()
    assert not ans.llm_used and "floor" in ans.notes[0]
    assert ans.answer == "B"
    assert all(c in {e.chunk_id for e in ans.evidence} for s in ans.sentences for c in s.chunk_ids)


def test_given_passages_replace_retrieval(tmp_path, hash_embedder):
    rt = Runtime(Settings(home=str(tmp_path)), embedder=hash_embedder)  # no index at all
    q = Question(
        id="p9",
        text="Does vitamin D reduce fracture risk?",
        options={"A": "yes", "B": "no", "C": "maybe"},
        passages=["Vitamin D did not reduce fracture risk. No significant effect was found."],
    )
    ans = build_method("retrieve-read", rt).answer_sync(q)
    assert ans.answer == "B"
    assert [e.corpus for e in ans.evidence] == ["given"]
    assert ans.evidence[0].chunk_id == "given:p9:0"


def test_regex_answer_extraction_needs_no_second_call(tmp_path):
    settings = mock_settings(
        tmp_path, [{"stage": "answer", "response": "Not A. The answer is (B) atorvastatin."}]
    )
    settings.answer.extraction = "regex"
    rt = Runtime(settings)
    ans = build_method("closed-book", rt).answer_sync(Question(text="LDL?", options=OPTS))
    assert ans.answer == "B" and not ans.parse_failed
    assert "answer_extract" not in rt.accounting()["stages"]


def test_regex_answer_extraction_reports_failure(tmp_path):
    settings = mock_settings(tmp_path, [{"stage": "answer", "response": "I cannot tell."}])
    settings.answer.extraction = "regex"
    ans = build_method("closed-book", Runtime(settings)).answer_sync(
        Question(text="LDL?", options=OPTS)
    )
    assert ans.parse_failed and ans.answer == ""


def test_method_options_convert_to_their_defaults_types_or_fail_clearly():
    from biorag.errors import BioragError
    from biorag.methods.context import typed_options

    defaults = {"k": 10, "threshold": 0.8, "directed": False, "mode": "batched", "retriever": None}
    given = {"k": "5", "threshold": 1, "directed": "true", "mode": "faithful", "retriever": "bm25"}
    assert typed_options("m", given, defaults) == {
        "k": 5, "threshold": 1.0, "directed": True, "mode": "faithful", "retriever": "bm25"
    }  # fmt: skip
    for bad, words in (({"k": "x"}, "k must be a whole number"), ({"k": 2.5}, "whole number"),
                       ({"k": True}, "whole number"), ({"threshold": None}, "a number"),
                       ({"directed": "maybe"}, "true or false")):  # fmt: skip
        with pytest.raises(BioragError, match=words):
            typed_options("m", bad, defaults)
