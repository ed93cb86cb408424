"""The exact-answer step of BioASQ-style questions, shared by the methods that answer them.

Factoid, list and option-less yes/no questions are scored on an exact answer (a name, a list of
names, yes/no) besides the ideal (free-text) one. :func:`with_exact` asks the model for it
(:func:`biorag.answer.exact.exact_answer`, given the ideal answer and the contexts) and falls
back to the no-LLM floor when the model's call fails or its answer holds nothing usable.
"""

from __future__ import annotations

import asyncio

from biorag.answer.exact import exact_answer, exact_answer_floor
from biorag.errors import LLMError, LLMUnavailableError
from biorag.llm.accounting import note_fallback
from biorag.methods.base import Answer, Question
from biorag.methods.details import ExactAnswerTrace
from biorag.runtime import Runtime

__all__ = ["EXACT_NOTE", "wants_exact", "with_exact"]

EXACT_NOTE = "exact answer: no-LLM floor (pattern candidates ranked by sentence similarity)"


def wants_exact(question: Question) -> bool:
    """Whether ``question`` is scored on an exact answer: factoid, list, or yes/no without
    options."""
    return question.type in ("factoid", "list") or (
        question.type == "yesno" and not question.options
    )


async def with_exact(rt: Runtime, question: Question, ans: Answer, contexts: list[str]) -> Answer:
    """``ans`` with ``exact`` and ``details["exact_answer"]`` set (when :func:`wants_exact`).

    When the model's exact-answer call fails (:class:`LLMError`, after its retries), or its
    answer holds no usable item while there are passages to draw from, the no-LLM floor answers
    instead: the answer (already paid for) is kept, and
    ``details["exact_answer"]["error"]`` and a note say what happened. Without a model the
    floor answers from ``contexts``."""

    if not wants_exact(question):
        return ans
    llm = rt.llm
    ideal = ans.answer_text or ans.answer
    failure = ""
    try:
        res = await exact_answer(llm, question.text, question.type, contexts, ideal, rt.embedder)
    except LLMUnavailableError:
        raise  # no model at all: stop, do not run on without it
    except LLMError as e:
        failure = f"{type(e).__name__}: {e}"
    model_raw = ""
    if not failure and res.method == "llm" and res.value is None and contexts:
        # the model answered, but nothing in it is usable ("yes" to a factoid question)
        failure = f"the model's answer held no usable {question.type} answer ({res.error})"
        model_raw = res.raw
    if failure:
        note_fallback(llm, "exact_answer")
        res = await asyncio.to_thread(
            exact_answer_floor, question.text, question.type, contexts, rt.embedder
        )
    trace = res.to_dict() | ({"error": failure} if failure else {})
    if model_raw:  # what the model wrote, kept beside the floor's answer
        trace["raw"] = model_raw
    ans.details.exact_answer = ExactAnswerTrace.model_validate(trace)
    if res.value is None:  # the model's answer held no usable exact answer
        ans.exact = "" if question.type == "yesno" else []
        ans.parse_failed = True
    else:
        ans.exact = res.value
    if failure:
        ans.notes.append(f"{EXACT_NOTE}, as the model's exact-answer step failed ({failure})")
    elif res.method == "floor":
        ans.notes.append(EXACT_NOTE)
    return ans
