"""One question model for every benchmark."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

QuestionType = Literal["multiple_choice", "yesno", "factoid", "list", "summary", "span", "free"]


class QAItem(BaseModel):
    """A benchmark question with its gold answer and, where the dataset gives them, gold evidence.

    ``options`` maps letters to option texts for multiple-choice (and yes/no/maybe) questions;
    ``gold`` is then a letter. For BioASQ factoid/list questions ``gold`` is the list of
    acceptable answers (each a list of synonyms); for summary/free questions the ideal answer.
    ``context`` holds the question's own passages where a setting answers from them
    (PubMedQA reasoning-required); ``gold_docs`` are source ids (PMIDs) of relevant documents.
    """

    id: str
    dataset: str
    question: str
    options: dict[str, str] = Field(default_factory=dict)
    gold: Any = None
    question_type: QuestionType = "multiple_choice"
    context: list[str] = Field(default_factory=list)
    gold_docs: list[str] = Field(default_factory=list)
    gold_snippets: list[str] = Field(default_factory=list)
    subset: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
