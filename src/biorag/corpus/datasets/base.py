"""One question model: :class:`Question` (what a method answers) and :class:`QAItem` (a
benchmark's question: the same question, with its gold answer and evidence)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, model_validator

QuestionType = Literal["multiple_choice", "yesno", "factoid", "list", "summary", "span", "free"]
#: The question types a method answers differently (the BioASQ ones); others are ``""``.
AnswerType = Literal["", "yesno", "factoid", "list", "summary"]


class Question(BaseModel):
    """A question, optionally multiple-choice (``options`` maps a letter to its text).

    ``type`` is the BioASQ question type when known (``yesno``, ``factoid``, ``list``,
    ``summary``); methods with an exact-answer step use it, the others ignore it.
    """

    id: str = "q"
    text: str = Field(validation_alias=AliasChoices("text", "question"))
    type: AnswerType = ""
    options: dict[str, str] = Field(default_factory=dict)
    passages: list[str] = Field(
        default_factory=list,
        validation_alias=AliasChoices("passages", "context"),
        description="given context (e.g. PubMedQA reasoning-required): retrieval methods read "
        "these instead of searching an index",
    )
    mask_mapping: dict[str, str] | None = Field(
        default=None,
        description="eval --mask-entities on a searched setting: the question's {form: label} "
        "mapping (maybe empty); retrieval searches with the real names and masks what it finds",
    )

    def options_block(self) -> str:
        return "\n".join(f"{k}. {v}" for k, v in self.options.items())


class QAItem(Question):
    """A benchmark question with its gold answer and, where the dataset gives them, gold evidence:
    a :class:`Question` a method answers as it is.

    ``options`` maps letters to option texts for multiple-choice (and yes/no/maybe) questions;
    ``gold`` is then a letter. For BioASQ factoid/list questions ``gold`` is the list of
    acceptable answers (each a list of synonyms); for summary/free questions the ideal answer.
    ``context`` holds the question's own passages where a setting answers from them
    (PubMedQA reasoning-required); ``gold_docs`` are source ids (PMIDs) of relevant documents.
    """

    id: str
    dataset: str
    gold: Any = None
    question_type: QuestionType = "multiple_choice"
    gold_docs: list[str] = Field(default_factory=list)
    gold_snippets: list[str] = Field(default_factory=list)
    subset: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _answer_type(self) -> QAItem:
        qt = self.question_type
        self.type = qt if qt in ("yesno", "factoid", "list", "summary") else ""
        return self

    def as_question(self) -> Question:
        """The question alone, without its gold answer and evidence: what a method is given
        (so no method can read the answer it is scored on)."""
        return Question.model_validate({k: getattr(self, k) for k in Question.model_fields})

    @property
    def question(self) -> str:
        """The question text (:attr:`text`)."""
        return self.text

    @property
    def context(self) -> list[str]:
        """The question's own passages (:attr:`passages`)."""
        return self.passages
