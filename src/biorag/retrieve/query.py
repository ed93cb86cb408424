"""Query formulation before retrieval: question rewriting, then a HyDE candidate answer.

CLAIMS (and its Rewrite and HyDE baselines) retrieve with the rewritten question, the answer
options and a hypothetical answer the model writes before seeing any document. Without an LLM
the query is the question and the options.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from biorag.llm import budget
from biorag.llm.base import ChatModel
from biorag.llm.prompts import PromptTemplate
from biorag.retrieve import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers

PROMPTS = "biorag.retrieve.prompts"


@dataclass
class Query:
    """The query a method retrieves with, and the pieces it was made from."""

    text: str
    rewritten: str
    candidate_answer: str = ""


def _one_line(text: str) -> str:
    text = text.strip().strip('"').strip()
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return re.sub(r"^(search )?query\s*:\s*", "", first.strip(), flags=re.I)


def options_text(options: dict[str, str]) -> str:
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def plain_query(question: str, options: dict[str, str]) -> Query:
    """The no-LLM query: the question followed by the options' texts."""
    text = " ".join([question, *options.values()]).strip()
    return Query(text=text, rewritten=question)


async def rewrite_question(llm: ChatModel, question: str) -> str:
    tpl = PromptTemplate.load(PROMPTS, "rewrite")
    resp = await llm.chat(
        tpl.request({"question": question}, stage="rewrite", max_tokens=budget.QUERY_LINE)
    )
    return _one_line(resp.text) or question


async def hyde_answer(llm: ChatModel, question: str, options: dict[str, str]) -> str:
    name = "hyde" if options else "hyde_open"
    tpl = PromptTemplate.load(PROMPTS, name)
    values = {"question": question, "options": options_text(options)}
    resp = await llm.chat(tpl.request(values, stage="hyde", max_tokens=budget.HYDE))
    return resp.text.strip()


async def build_query(
    llm: ChatModel | None,
    question: str,
    options: dict[str, str],
    rewrite: bool = True,
    hyde: bool = True,
) -> Query:
    """Rewritten question + options + candidate answer (CLAIMS); plain query without an LLM."""
    if llm is None:
        return plain_query(question, options)

    async def nothing(value: str) -> str:
        return value

    # The two calls are independent: one round on the critical path, not two.
    rewritten, candidate = await asyncio.gather(
        rewrite_question(llm, question) if rewrite else nothing(question),
        hyde_answer(llm, question, options) if hyde else nothing(""),
    )
    parts = [rewritten, *options.values(), candidate]
    text = " ".join(p for p in parts if p).strip()
    return Query(text=text, rewritten=rewritten, candidate_answer=candidate)
