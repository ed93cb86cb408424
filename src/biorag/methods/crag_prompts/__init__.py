"""Prompt templates of the CRAG baseline (``$name`` placeholders) and their JSON schema."""

SCORES_SCHEMA = {
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
