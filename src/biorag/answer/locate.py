"""MIRAGE's answer location (``locate_answer`` of github.com/Teddy-XiongGZ/MIRAGE): the option
letter its evaluator reads from a model's output. The MIRAGE-prompt reader
(:func:`biorag.answer.reader.read_multiple_choice_mirage`) reads its answers this way, and the
official MIRAGE scoring (:mod:`biorag.eval.metrics.official`) reads unparsed answers this way."""

from __future__ import annotations

import re

#: MIRAGE's answer-location rules, tried in order on the text after ``"answer_choice": "``;
#: anchored ones look at the start of that text only
_MIRAGE_RULES = [
    re.compile(p)
    for p in (
        r"^\s*([ABCD])$",
        r"^\s*([ABCD]) or",
        r"^\s*([ABCD]) and",
        r"^\s*([ABCD])/",
        r"^\s*([ABCD]),",
        r"[Oo]ption ([ABCD])",
        r":\s*([ABCD])",
        r"^\s*([ABCD])\.",
        r'^\s*([ABCD])"',
        r"^\s*([ABCD]):",
    )
]


def locate_answer_choice(output: str) -> str | None:
    """The letter of the first MIRAGE rule that matches the text after the last
    ``"answer_choice": "``, or ``None`` when none does."""
    tail = (output or "").split('"answer_choice": "')[-1].strip()
    for rule in _MIRAGE_RULES:
        found = rule.findall(tail)
        if found:
            return str(found[0])
    return None


def mirage_locate_answer(output: str) -> str:
    """The letter MIRAGE's ``locate_answer`` reads from a model's output: the first rule that
    matches the text after the last ``"answer_choice": "``, else "A"."""
    return locate_answer_choice(output) or "A"
