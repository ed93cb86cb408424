"""The five-point LLM answer score (BioCDQA's GPT-4-based evaluation).

:func:`five_point_score` asks a judge model (stage ``judge_score``) for
``{"score": 1..5, "reason": str}``; a score out of range, not an integer, or an unparseable
answer gives ``score=None``.

The judge is whatever LLM is passed in. The ``[judge]`` settings (``BIORAG_JUDGE_*``) give the
judge's own LLM settings (``Settings.judge_llm()``: ``[llm]`` with the judge's keys replacing
it), so a different judge model than the answering one is::

    judge = biorag.llm.build_llm(settings.model_copy(update={"llm": settings.judge_llm()}))
    scored = await five_point_score(judge, question, ideal_answer, answer)

The evaluation runner judges every run this way and averages the scores
(:mod:`biorag.eval.judging.judge_run`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from biorag.eval.judging import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.llm import PromptTemplate, budget
from biorag.llm.base import ChatModel

PROMPTS = "biorag.eval.judging.prompts"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer"},
                   "reason": {"type": "string"}},
    "required": ["score"],
}  # fmt: skip


@dataclass
class JudgeScore:
    """The 1..5 score (None when the judge gave no usable one), the raw answer, the reason."""

    score: int | None
    raw: str
    reason: str = ""


def prompt_version() -> str:
    """The judge prompt's content version: judgments made with another prompt are redone."""
    return PromptTemplate.load(PROMPTS, "judge_score").version


def parse_score(value: Any) -> tuple[int | None, str]:
    """(score in 1..5 or None, reason) from the judge's parsed JSON."""
    if not isinstance(value, dict):
        return None, ""
    reason = value.get("reason")
    reason = reason.strip() if isinstance(reason, str) else ""
    s = value.get("score")
    if isinstance(s, str):
        try:
            s = float(s.strip())
        except ValueError:
            return None, reason
    if isinstance(s, bool) or not isinstance(s, int | float) or s != int(s):
        return None, reason
    s = int(s)
    return (s if 1 <= s <= 5 else None), reason


async def five_point_score(
    llm: ChatModel, question: str, ideal_answer: str, answer: str
) -> JudgeScore:
    """Score ``answer`` against ``ideal_answer`` 1..5; LLMError when the judge call fails."""
    tpl = PromptTemplate.load(PROMPTS, "judge_score")
    values = {"question": question, "ideal_answer": ideal_answer, "answer": answer or "(none)"}
    req = tpl.request(
        values, stage="judge_score", json_schema=SCHEMA, max_tokens=budget.JUDGE_SCORE
    )
    resp = await llm.chat_json(req)
    score, reason = parse_score(resp.parsed)
    return JudgeScore(score=score, raw=resp.text, reason=reason)
