"""The result of the BioASQ exact-answer step (:mod:`biorag.answer.exact`), in a module of its
own so that :mod:`biorag.methods.details` types its trace with the same fields without
importing the step (and the LLM layer) itself."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ExactAnswer(BaseModel):
    """An exact answer: ``value`` ('yes'/'no', or names), the model's text, how it was made
    (``error``: why the model's answer held none; ``candidates``: the floor's name, score and
    count rows). Answers carry it as :class:`biorag.methods.details.ExactAnswerTrace`."""

    value: str | list[str] | None
    raw: str = ""
    parse_failed: bool = False
    method: Literal["llm", "floor"] = "llm"
    qtype: str = ""
    error: str = ""
    candidates: list[dict[str, Any]] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()
