"""Prompt templates of the SELF-RAG baseline (``$name`` placeholders) and their JSON schemas.

SELF-RAG's fine-tuned generator writes reflection tokens ([Retrieve], [IsRel], [IsSup],
[IsUse]) inside its output; a prompted model is asked for the same four judgements as JSON.
"""

from typing import Any

RETRIEVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"retrieve": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["retrieve"],
}
SEGMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "relevance": {"type": "string", "enum": ["relevant", "irrelevant"]},
        "answer": {"type": "string"},
        "support": {"type": "string", "enum": ["fully", "partially", "no"]},
        "utility": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["relevance", "answer", "support", "utility"],
}


def segment_schema(letters: list[str]) -> dict[str, Any]:
    """The segment's schema: for a multiple-choice question the answer is one of ``letters``
    (so a server that constrains its output to the schema always names an option)."""
    if not letters:
        return SEGMENT_SCHEMA
    answer = {"type": "string", "enum": list(letters)}
    return {**SEGMENT_SCHEMA, "properties": {**SEGMENT_SCHEMA["properties"], "answer": answer}}
