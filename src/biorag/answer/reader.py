"""The LLM reader: answer a question from a context, then extract the chosen option as JSON.

Multiple-choice answering takes two calls, as in CLAIMS: a free reasoning answer, then a second
call that returns only ``{"answer": "<letter>"}`` (through the server's structured output where it
has one, parsed leniently otherwise). A letter that cannot be recovered is reported as a parse
failure, never guessed. Free-text answers cite their passages by number, and each sentence is
mapped back to the chunks it cites. The passages are ``<passage id="n">`` blocks
(:mod:`biorag.llm.evidence`), n counting from 1 in rank order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from biorag.answer import dry_replies as _dry_replies  # noqa: F401 - registers its dry-run answers
from biorag.answer.locate import locate_answer_choice
from biorag.answer.regex_extract import extract_letter_regex
from biorag.llm import budget
from biorag.llm.accounting import note_fallback
from biorag.llm.base import ChatModel
from biorag.llm.evidence import neutralize, numbered_passages
from biorag.llm.prompts import PromptTemplate

PROMPTS = "biorag.answer.prompts"
_CITE = re.compile(r"\[(\d+)\]")


@dataclass
class ReaderResult:
    answer: str
    answer_text: str
    raw_output: str
    parse_failed: bool
    sentences: list[tuple[str, list[int]]] = field(default_factory=list)


def letter_schema(letters: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": letters}},
        "required": ["answer"],
        "additionalProperties": False,
    }


def number_passages(texts: list[str]) -> str:
    """The context passages as ``<passage id="n">`` blocks numbered from 1, in rank order."""
    return numbered_passages(texts)


async def extract_letter(
    llm: ChatModel, question: str, options: dict[str, str], response: str, extraction: str = "json"
) -> tuple[str, bool, str]:
    """The option letter the written answer chose. Returns (letter, failed, raw).

    ``extraction="json"``: a second call that answers ``{"answer": "<letter>"}`` (CLAIMS);
    ``"regex"``: regular expressions over the answer itself, no call (VectorGraphRAG).
    """
    if extraction == "regex":
        found = extract_letter_regex(response, list(options), options=options)
        return (found or "", found is None, "")
    letters = list(options)
    values = {
        "question": question,
        "options": _options_text(options),
        "response": neutralize(response),  # a model's text may echo a passage's delimiters
        "letters": ", ".join(letters),
    }
    resp = await llm.chat(
        PromptTemplate.load(PROMPTS, "extract_letter").request(
            values,
            stage="answer_extract",
            max_tokens=budget.LETTER_JSON,
            temperature=0.0,
            json_schema=letter_schema(letters),
        )
    )
    letter = _chosen(resp, letters)
    if letter is not None:
        return letter, False, resp.text
    # The extraction did not come back as JSON (a small model, or a server without constrained
    # decoding): read the choice from the extraction's text, then from the answer itself.

    for text in (resp.text, response):
        found = extract_letter_regex(text, letters, options=options)
        if found is not None:
            note_fallback(llm, "answer_extract")
            return found, False, resp.text
    return "", True, resp.text


def _chosen(resp: Any, letters: list[str]) -> str | None:
    """The option letter a JSON reply's ``answer`` names, as the options spell it (None: none)."""
    value = resp.parsed.get("answer") if isinstance(resp.parsed, dict) else None
    if isinstance(value, str) and value.strip().upper() in {x.upper() for x in letters}:
        return next(x for x in letters if x.upper() == value.strip().upper())
    return None


def _options_text(options: dict[str, str]) -> str:
    """The options as the prompts show them: ``A. text``, one a line."""
    return "\n".join(f"{k}. {v}" for k, v in options.items())


async def _read(
    llm: ChatModel,
    prompts: tuple[str, str],
    question: str,
    options: dict[str, str] | None,
    context: list[str] | None,
    stage: str,
    max_tokens: int,
) -> Any:
    """The reply to ``prompts[0]`` with the question, its ``options`` (None: a prompt without
    them) and the numbered ``context`` passages, or to ``prompts[1]`` (closed book) without a
    context."""
    values: dict[str, Any] = {"question": question}
    if options is not None:
        values["options"] = _options_text(options)
    if context:
        tpl = PromptTemplate.load(PROMPTS, prompts[0])
        values["context"] = number_passages(context)
    else:
        tpl = PromptTemplate.load(PROMPTS, prompts[1])
    return await llm.chat(tpl.request(values, stage=stage, max_tokens=max_tokens))


def reasoning_schema(letters: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "answer": {"type": "string", "enum": letters},
        },
        "required": ["reasoning", "answer"],
    }


async def read_multiple_choice_once(
    llm: ChatModel,
    question: str,
    options: dict[str, str],
    context: list[str],
    extraction: str = "json",
) -> ReaderResult:
    """One call: reasoning and letter together as JSON (batched modes). If the letter cannot be
    read, the extraction call of the two-call reader gets the raw answer; nothing is guessed."""
    letters = list(options)
    tpl = PromptTemplate.load(PROMPTS, "read_json")
    values = {
        "question": question,
        "options": _options_text(options),
        "context": number_passages(context),
        "letters": ", ".join(letters),
    }
    resp = await llm.chat(
        tpl.request(
            values,
            stage="answer",
            json_schema=reasoning_schema(letters),
            max_tokens=budget.READ_REASONING,
        )
    )
    letter = _chosen(resp, letters)
    if letter is not None:
        return ReaderResult(letter, options[letter], resp.text, parse_failed=False)
    letter, failed, raw = await extract_letter(llm, question, options, resp.text, extraction)
    return ReaderResult(letter, options.get(letter, ""), resp.text + "\n---\n" + raw, failed)


async def read_multiple_choice(
    llm: ChatModel,
    question: str,
    options: dict[str, str],
    context: list[str] | None,
    extraction: str = "json",
) -> ReaderResult:
    """Reason over the context (or none: closed book), then extract the letter (two calls)."""
    prompts = ("read", "closed_book")
    resp = await _read(llm, prompts, question, options, context, "answer", budget.READ_REASONING)
    letter, failed, raw = await extract_letter(llm, question, options, resp.text, extraction)
    return ReaderResult(
        answer=letter,
        answer_text=options.get(letter, ""),
        raw_output=resp.text + "\n---\n" + raw,
        parse_failed=failed,
    )


async def read_multiple_choice_mirage(
    llm: ChatModel, question: str, options: dict[str, str], context: list[str] | None
) -> ReaderResult:
    """MIRAGE's reading (``answer.prompt = "mirage"``): one call asking, as MedRAG's templates
    do, for ``{"step_by_step_thinking", "answer_choice"}`` with no constrained decoding, the
    letter read by MIRAGE's ``locate_answer`` rules (:mod:`biorag.answer.locate`). An output no
    rule reads is a parse failure (MIRAGE's scorer then reads "A")."""

    prompts = ("read_mirage", "closed_book_mirage")
    resp = await _read(
        llm, prompts, question, options, context, "answer_mirage", budget.READ_REASONING
    )
    letter = locate_answer_choice(resp.text)
    if letter not in options:
        letter = None
    return ReaderResult(
        answer=letter or "",
        answer_text=options.get(letter or "", ""),
        raw_output=resp.text,
        parse_failed=letter is None,
    )


async def read_free_text(llm: ChatModel, question: str, context: list[str]) -> ReaderResult:
    """A short answer whose sentences cite the numbered passages they rest on; with no
    ``context``, a short answer from the model's own knowledge (closed book, no citations)."""
    prompts = ("read_free", "closed_book_free")
    resp = await _read(llm, prompts, question, None, context, "answer", budget.CITED_ANSWER)
    sentences: list[tuple[str, list[int]]] = []
    for sent in re.split(r"(?<=[.!?\]])\s+(?=[A-Z])", resp.text.strip()):
        cites = [int(n) for n in _CITE.findall(sent) if 1 <= int(n) <= len(context)]
        # "... diabetes [1]." -> "... diabetes." (no space left before the period)
        clean = re.sub(r"\s+([.!?;:,])", r"\1", _CITE.sub("", sent)).strip()
        if clean:
            sentences.append((clean, cites))
    return ReaderResult(
        answer=resp.text.strip(),
        answer_text=resp.text.strip(),
        raw_output=resp.text,
        parse_failed=False,
        sentences=sentences,
    )
