"""The data of the VectorGraphRAG knowledge graph: triplets, normalized keys, add reports.

An entity is identified by its *key*: the name lower-cased with runs of whitespace collapsed to
one space (``normalize_key``). Names are stored as first given (outer whitespace stripped), so
``"Vitamin  C"`` and ``"vitamin c"`` are one entity displayed as ``"Vitamin  C"``. A triplet is
identified by the keys of its subject, predicate and object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

FIELDS = ("subject", "predicate", "object")


def normalize_key(text: str) -> str:
    """The lookup key of an entity name or predicate: lower-cased, whitespace collapsed."""
    return " ".join(text.split()).lower()


class Triplet(BaseModel):
    """One fact ``(subject, predicate, object)`` with its provenance.

    ``source_id`` names the QA item or document the triplet came from; ``model`` the extraction
    model (``"rule-based"`` for the no-LLM path). Instances are immutable and hashable.
    """

    model_config = ConfigDict(frozen=True)

    subject: str
    predicate: str
    object: str
    source_id: str = ""
    model: str = ""

    def text(self) -> str:
        """``"subject predicate object"``: the text that is embedded and shown to the reader."""
        return f"{self.subject.strip()} {self.predicate.strip()} {self.object.strip()}"

    def is_valid(self) -> bool:
        """True when subject, predicate and object are all non-empty after stripping."""
        return not self.problem()

    def problem(self) -> str:
        """Why the triplet is invalid (e.g. ``"empty object"``), or ``""`` when it is valid."""
        empty = [name for name in FIELDS if not getattr(self, name).strip()]
        return f"empty {', '.join(empty)}" if empty else ""

    def key(self) -> tuple[str, str, str]:
        """The normalized identity of the triplet (provenance is not part of it)."""
        return (
            normalize_key(self.subject),
            normalize_key(self.predicate),
            normalize_key(self.object),
        )


@dataclass
class AddReport:
    """What ``KGStore.add_triplets`` did.

    ``added``: new triplets stored; ``duplicates``: valid triplets already stored (or repeated in
    the input), not stored again; ``invalid``: ``(index in the input, reason)`` of the rejected.
    """

    added: int = 0
    duplicates: int = 0
    invalid: list[tuple[int, str]] = field(default_factory=list)
