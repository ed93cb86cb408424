"""What a support check says of an answer: a verdict per (sentence, cited passage), the
sentence's verdict over the union of its citations, and what the check was and cost."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

#: The four verdicts, strongest support first; ``contradicted`` is its own kind, not weaker.
Label = Literal["supported", "partly_supported", "not_supported", "contradicted"]
LABELS: tuple[Label, ...] = ("supported", "partly_supported", "not_supported", "contradicted")
#: The two verdicts a reader should be shown as problems.
FLAGGED: frozenset[str] = frozenset({"not_supported", "contradicted"})


class Span(BaseModel):
    """The part of a passage that decides a verdict: its text and character offsets."""

    text: str
    start: int
    end: int


class PassageVerdict(BaseModel):
    """One sentence against one passage it cites."""

    passage_id: str = Field(description="the cited chunk id (an evidence entry's chunk_id)")
    label: Label
    score: float = Field(default=0.0, description="the verifier's support score, 0..1")
    span: Span | None = Field(default=None, description="the deciding span; None: none found")
    reason: str = Field(default="", description="why, when an agreement check decided it")


class JointSupport(BaseModel):
    """What a sentence's cited passages say together, when none supports it fully alone."""

    passage_ids: list[str] = Field(description="the passages whose spans were joined")
    label: Label
    score: float = 0.0
    needed: list[str] = Field(
        default_factory=list,
        description="the joined passages without which the joint verdict is weaker",
    )


class SentenceSupport(BaseModel):
    """A sentence's verdict: over the union of its citations (``label``), and per passage;
    ``joint``: the passages' joint verdict, when it is stronger than any single one's."""

    label: Label
    verdicts: list[PassageVerdict] = Field(default_factory=list)
    joint: JointSupport | None = None
    unknown_citations: list[str] = Field(
        default_factory=list,
        description="cited ids that are not in the answer's evidence: reported, never dropped",
    )


class Verification(BaseModel):
    """How an answer's sentences were checked."""

    verifier: Literal["rules", "llm"] = Field(
        description="rules: claim alignment (lexical and embedding similarity with negation, "
        "number, unit and direction agreement), a no-LLM floor; llm: the model's verdicts"
    )
    sentences: int = 0
    counts: dict[str, int] = Field(default_factory=dict, description="sentences per label")
    uncited: int = Field(default=0, description="sentences that cite nothing (not_supported)")
    unknown_citations: int = 0
    tokens: int = Field(default=0, description="LLM tokens the check used (0 for rules)")
    seconds: float = 0.0
    note: str = ""


def evidence_key(evidence: dict[str, Any], position: int) -> str | None:
    """The id sentences cite an evidence entry by (as dumped; ``position`` 1-based): its
    ``chunk_id``, or ``triplet:<rank>`` for a triplet."""
    if evidence.get("chunk_id"):
        return str(evidence["chunk_id"])
    if evidence.get("kind") == "triplet":
        return f"triplet:{evidence.get('rank') or position}"
    return None
