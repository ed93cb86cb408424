"""``answer.prompt = "mirage"``: one call in MedRAG's output format, the letter read by MIRAGE's
``locate_answer`` rules, for the methods that read through the shared answer step and for
closed-book."""

from __future__ import annotations

import json

import pytest
from tests.methods.methods_helpers import GIVEN

from biorag.answer.locate import locate_answer_choice, mirage_locate_answer
from biorag.config import Settings
from biorag.methods.registry import build_method
from biorag.runtime import Runtime


def _runtime(tmp_path, hash_embedder, reply: str, prompt: str = "mirage") -> Runtime:
    script = tmp_path / "script.json"
    rules = [{"stage": "answer_mirage", "response": reply},
             {"stage": "answer", "response": "It is B."},
             {"stage": "answer_extract", "response": {"answer": "B"}}]  # fmt: skip
    script.write_text(json.dumps(rules))
    data = {
        "home": str(tmp_path / "home"),
        "llm": {"backend": "mock", "mock_script": str(script), "cache": False},
        "answer": {"prompt": prompt},
    }
    return Runtime(Settings.model_validate(data), [], embedder=hash_embedder)


@pytest.mark.parametrize(
    ("output", "letter"),
    [
        ('{"step_by_step_thinking": "x", "answer_choice": "C"}', "C"),
        ('{"step_by_step_thinking": "x", "answer_choice": "Option B is right"}', "B"),
        ("I cannot decide.", None),
    ],
)
def test_locate(output: str, letter: str | None) -> None:
    assert locate_answer_choice(output) == letter
    assert mirage_locate_answer(output) == (letter or "A")


@pytest.mark.parametrize("method", ["retrieve-read", "closed-book"])
def test_methods_read_with_the_mirage_prompt(tmp_path, hash_embedder, method) -> None:
    reply = '{"step_by_step_thinking": "KRX1 drives it.", "answer_choice": "A"}'
    rt = _runtime(tmp_path, hash_embedder, reply)
    ans = build_method(method, rt).answer_sync(GIVEN)
    assert (ans.answer, ans.answer_text, ans.parse_failed) == ("A", "yes", False)
    assert ans.raw_output == reply
    stages = rt.accounting()["stages"]
    assert stages["answer_mirage"]["calls"] == 1 and "answer_extract" not in stages
    req = rt.shared_llm.backend.calls[-1]
    system, user = req.messages[0]["content"], req.messages[-1]["content"]
    assert '"answer_choice"' in system and ("Documents:" in user) == (method != "closed-book")


def test_unreadable_output_is_a_parse_failure(tmp_path, hash_embedder) -> None:
    rt = _runtime(tmp_path, hash_embedder, "The answer is surely the second one.")
    ans = build_method("retrieve-read", rt).answer_sync(GIVEN)
    assert ans.parse_failed and ans.answer == "" and "second one" in ans.raw_output
    biorag = _runtime(tmp_path, hash_embedder, "unused", prompt="biorag")
    assert build_method("retrieve-read", biorag).answer_sync(GIVEN).answer == "B"
