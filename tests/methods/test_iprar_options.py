"""IP-RAR review fixes: option validation (also through the CLI), a failed exact-answer call,
lenient batched-verdict parsing, and keyword matching at the full-text level only."""

from __future__ import annotations

import json

import pytest
from methods_helpers import GIVEN, QUESTION, build_index, make_runtime
from test_iprar import batch_rules, mock_runtime, rules, stage_calls, typed
from typer.testing import CliRunner

from biorag.errors import BioragError
from biorag.methods.exact_step import EXACT_NOTE
from biorag.methods.iprar import IPRAR
from biorag.methods.iprar_generate import batch_verdicts

# -- 3. option validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opts", "needle"),
    [
        ({"weights": 5}, "weights must be 3 numbers"),
        ({"weights": [5, 3]}, "weights must be 3 numbers"),
        ({"weights": [5, "3", 1]}, "weights must be 3 numbers"),
        ({"relevant_target": "five"}, "relevant_target must be a positive integer"),
        ({"relevant_target": 0}, "relevant_target must be a positive integer"),
        ({"k": 2.5}, "k must be a positive integer"),
        ({"k": True}, "k must be a positive integer"),
        ({"support_fallback": -1}, "support_fallback must be a positive integer"),
        ({"relevance_batch": "4"}, "relevance_batch must be a positive integer"),
        ({"support_min": "high"}, "support_min must be a number"),
        ({"relevance_threshold": None}, "relevance_threshold must be a number"),
        ({"use_keywords": "no"}, "use_keywords must be true or false"),
        ({"exact_answer": 1}, "exact_answer must be true or false"),
        ({"keyword_levels": "fulltext"}, "keyword_levels must be a list"),
        ({"keyword_levels": ["body"]}, "keyword_levels must be a list"),
        ({"keyword_levels": ["fulltext", "fulltext"]}, "keyword_levels must be a list"),
        ({"abstract_corpus": 3, "fulltext_corpus": "x"}, "abstract_corpus must be an index name"),
        ({"reasoning_model": "deepseek-r1"}, "reasoning_model must be a JSON object"),
        ({"reasoning_model": {"modle": "r1"}}, r"reasoning_model has unknown key\(s\) \['modle'\]"),
        ({"reasoning_model": {"backend": "openai"}}, "needs base_url and model"),
        ({"reasoning_model": {"temperature": "hot"}}, "temperature"),
        ({"reasoning_model": {"backend": "none"}}, 'cannot set backend "none"'),
    ],
)
def test_bad_options_are_one_clear_error(tmp_path, hash_embedder, opts, needle):
    rt = make_runtime(tmp_path, hash_embedder)
    with pytest.raises(BioragError, match=needle) as e:
        IPRAR(rt, **opts)
    assert "\n" not in str(e.value) and str(e.value).startswith("iprar ")


def test_good_options_pass(tmp_path, hash_embedder):
    rt = make_runtime(tmp_path, hash_embedder)
    m = IPRAR(
        rt,
        weights=(1, 0.5, 2),
        k=3,
        support_min=40,
        keyword_levels=[],
        reasoning_model={"backend": "mock", "mock_script": "dry-run", "model": "r1"},
    )
    assert m.options["k"] == 3 and "llm" not in rt.built()  # nothing built to validate


def test_cli_bad_method_options_one_line_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("BIORAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BIORAG_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)
    from biorag.cli.main import app

    runner = CliRunner()
    cases = [
        ('{"weights": 5}', "weights must be 3 numbers"),
        ('{"reasoning_model": "deepseek-r1"}', "reasoning_model must be a JSON object"),
        ('{"reasoning_model": {"modle": "r1"}}', "unknown key(s) ['modle']"),
    ]
    for opts, needle in cases:
        res = runner.invoke(app, ["ask", "--method", "iprar", "--method-options", opts, "Q?"])
        assert res.exit_code == 2, res.output
        assert needle in res.stderr and "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    # biorag eval: refused before any question is answered
    data = tmp_path / "ori_pqal.json"
    data.write_text(
        json.dumps(
            {
                "1": {
                    "QUESTION": "Does drug 1 work?",
                    "CONTEXTS": ["Drug 1 worked."],
                    "LABELS": ["RESULTS"],
                    "final_decision": "yes",
                }
            }
        )
    )
    res = runner.invoke(
        app,
        [
            "eval", "--dataset", "pubmedqa", "--data", str(data), "--setting",
            "reasoning-required", "--methods", "iprar", "--method-options",
            '{"iprar": {"relevant_target": "five"}}', "--out", str(tmp_path / "run"),
        ],
    )  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "method iprar: option relevant_target must be a whole number" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


# -- 2. a failed exact-answer call -------------------------------------------------------------


def test_failed_exact_answer_call_keeps_the_answer(tmp_path, hash_embedder, many_given):
    script = [*rules(["Yes"] * 8), {"stage": "exact_answer", "error": "fatal", "message": "down"}]
    rt, backend = mock_runtime(tmp_path, hash_embedder, script)
    ans = IPRAR(rt, use_support_scores=False).answer_sync(typed(many_given, "factoid"))
    assert ans.answer.startswith("KRX1 drives fibrosis")  # the final answer survives
    ex = ans.model_dump()["details"]["exact_answer"]
    assert ex["method"] == "floor" and "down" in ex["error"] and "LLMError" in ex["error"]
    assert isinstance(ans.exact, list) and ans.exact == ex["value"]
    assert any(n.startswith(EXACT_NOTE) and "down" in n for n in ans.notes)
    assert stage_calls(backend, "exact_answer") == 1
    assert rt.accounting()["stages"]["exact_answer"]["failures"] == 1


# -- 4. batched verdicts -----------------------------------------------------------------------


def test_batch_verdicts_accepts_common_formats():
    rows = [
        {"id": "1", "relevant": "true"},
        {"id": 2, "relevant": 1},
        {"id": 3.0, "relevant": True},
        {"id": "[4]", "relevant": "No."},
        {"id": "5", "relevant": 0},
        {"id": "6.0", "relevant": "false"},
        {"id": 7, "relevant": "1"},
        {"id": 8.5, "relevant": True},  # no passage number
        {"id": 9, "relevant": 2},  # no verdict
        {"id": True, "relevant": True},  # no passage number
    ]
    assert batch_verdicts({"verdicts": rows}, "") == {
        1: True,
        2: True,
        3: True,
        4: False,
        5: False,
        6: False,
        7: True,
    }
    assert batch_verdicts(None, json.dumps(rows[:3])) == {1: True, 2: True, 3: True}
    assert batch_verdicts({"1": "yes", "2": "false"}, "") == {1: True, 2: False}


def test_a_batch_without_any_verdict_records_a_parse_error(tmp_path, hash_embedder, many_given):
    numeric = {"verdicts": [{"id": i, "relevant": 1} for i in range(1, 5)]}
    rt, _ = mock_runtime(tmp_path, hash_embedder, batch_rules([{"verdicts": "unsure"}, numeric]))
    d = (
        IPRAR(rt, use_support_scores=False, relevance_batch=4)
        .answer_sync(many_given)
        .model_dump()["details"]
    )
    rows = d["relevance"]
    assert len(rows) == 8
    assert all(r["missing"] and r["parse_error"] == "no verdict in the reply" for r in rows[:4])
    assert all(r["relevant"] and "parse_error" not in r for r in rows[4:])
    ranked = [c["chunk_id"] for c in d["aggregated"]]
    assert d["selected"] == ranked[4:8]


# -- 5. keyword matching at the full-text level only -------------------------------------------


@pytest.mark.parametrize(
    ("opts", "keyword_lists"),
    [
        ({}, {"keyword@fulltext"}),
        ({"keyword_levels": ["abstract", "fulltext"]}, {"keyword@abstract", "keyword@fulltext"}),
        ({"keyword_levels": ["abstract"]}, {"keyword@abstract"}),
        ({"keyword_levels": []}, set()),
        ({"use_fulltext_level": False}, set()),
    ],
)
def test_keyword_levels(tmp_path, hash_embedder, opts, keyword_lists):
    index = build_index(tmp_path, hash_embedder)
    rt = make_runtime(tmp_path, hash_embedder, index)
    d = IPRAR(rt, k=3, **opts).answer_sync(QUESTION).model_dump()["details"]
    assert {n for n in d["lists"] if n.startswith("keyword@")} == keyword_lists
    dense = {n for n in d["lists"] if not n.startswith("keyword@")}
    levels = ["abstract"] if opts.get("use_fulltext_level") is False else ["abstract", "fulltext"]
    assert dense == {f"{g}@{lv}" for g in ("question", "virtual") for lv in levels}
    rt.close()


@pytest.fixture
def many_given():
    texts = [f"KRX1 fibrosis liver passage number {i} cirrhosis." for i in range(8)]
    return GIVEN.model_copy(update={"passages": texts, "id": "m"})
