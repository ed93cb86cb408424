"""Prompt templates of the SELF-RAG baseline (``$name`` placeholders) and their JSON schemas.

SELF-RAG's fine-tuned generator writes reflection tokens ([Retrieve], [IsRel], [IsSup],
[IsUse]) inside its output; a prompted model is asked for the same four judgements as JSON.
"""

RETRIEVE_SCHEMA = {
    "type": "object",
    "properties": {"retrieve": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["retrieve"],
}
SEGMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "relevance": {"type": "string", "enum": ["relevant", "irrelevant"]},
        "answer": {"type": "string"},
        "support": {"type": "string", "enum": ["fully", "partially", "no"]},
        "utility": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["relevance", "answer", "support", "utility"],
}
