"""Prompt templates of the CRAG baseline (``$name`` placeholders) and their JSON schema.

The evaluator answers in the same ``{"scores": [{"id", "score"}]}`` form as IP-RAR's support
scores, so it shares that schema.
"""

from biorag.methods.iprar_prompts import SUPPORT_SCHEMA as SCORES_SCHEMA

__all__ = ["SCORES_SCHEMA"]
