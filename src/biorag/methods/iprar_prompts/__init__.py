"""Prompt templates of the IP-RAR method (``$name`` placeholders) and their JSON schemas."""

PREREASON_SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": {"type": "array", "items": {"type": "string"}},
        "synonyms": {"type": "object", "additionalProperties": {"type": "array"}},
        "virtual_answer": {"type": "string"},
    },
    "required": ["keywords", "synonyms", "virtual_answer"],
}
SUPPORT_SCHEMA = {
    "type": "object",
    "properties": {
        "scores": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "score": {"type": "number"}},
                "required": ["id", "score"],
            },
        }
    },
    "required": ["scores"],
}
RELEVANCE_BATCH_SCHEMA = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "relevant": {"type": "boolean"}},
                "required": ["id", "relevant"],
            },
        }
    },
    "required": ["verdicts"],
}
