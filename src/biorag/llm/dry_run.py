"""A dry-run model: well-formed answers for every biorag prompt, with no model behind them.

Select it with ``llm.backend = "mock"`` and ``llm.mock_script = "dry-run"``. Each operator
declares the answer its stage gets, in the format it parses, beside its prompts: a package's
``dry_replies.py`` registers one function per stage with :func:`dry_run_reply` (``CLAIM:``
lines from the text's sentences, JSON verdicts keyed by the ids in the prompt,
``{"answer": "A"}``), and the operator's module imports it. This module holds the registry and
the helpers those replies share; it knows no operator. A stage nobody registered gets the
prompt's first words. The dry-run model exists to count what a pipeline would ask of a real
model (calls, tokens, sequential rounds) and to exercise the LLM code paths end to end; its
answers carry no knowledge.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from biorag.llm.evidence import parse_passages
from biorag.llm.types import ChatRequest

DRY_RUN = "dry-run"
_NUMBERED = re.compile(r"^\[(\d+)\] ", re.M)

Reply = Callable[[ChatRequest], str]
R = TypeVar("R", bound=Reply)
_REPLIES: dict[str, Reply] = {}


def after(text: str, marker: str) -> str:
    i = text.rfind(marker)
    return text[i + len(marker) :].strip() if i >= 0 else text.strip()


def passage_texts(prompt: str) -> list[str]:
    """The texts of the prompt's passage blocks, in order."""
    return [text for _, text in parse_passages(prompt)]


def first_passage(prompt: str, marker: str) -> str:
    """The first passage block's text (the text after ``marker`` in a prompt without blocks)."""
    texts = passage_texts(prompt)
    return texts[0] if texts else after(prompt, marker)


def numbers(prompt: str) -> list[int]:
    """The numeric passage ids of the prompt (the items a batched prompt numbers; ``[n] ``
    line prefixes in a prompt without blocks)."""
    ids = [pid for pid, _ in parse_passages(prompt)] or _NUMBERED.findall(prompt)
    return sorted({int(pid) for pid in ids if pid.isdigit()})


def sentences(text: str) -> list[str]:
    from biorag.corpus.sentences import split_sentences

    return [text[s:e].strip() for s, e in split_sentences(text) if e - s > 20]


def first_words(text: str, n: int = 60) -> str:
    return " ".join(text.split()[:n])


def dry_run_reply(*stages: str) -> Callable[[R], R]:
    """Register the decorated function as the dry-run answer of ``stages`` (a stage ending in
    ``*`` is a prefix: ``"eval_*"``)."""

    def register(fn: R) -> R:
        for stage in stages:
            _REPLIES[stage] = fn
        return fn

    return register


def dry_run_responder(req: ChatRequest) -> str:
    """The answer a well-behaved model would give to ``req``, in format only."""
    reply = _REPLIES.get(req.stage)
    if reply is None:
        prefixes = [s for s in _REPLIES if s.endswith("*") and req.stage.startswith(s[:-1])]
        reply = _REPLIES[max(prefixes, key=len)] if prefixes else None
    return reply(req) if reply is not None else first_words(req.last_user_message(), 40)
