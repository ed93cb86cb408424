"""Answer: read a context and answer (LLM reader), or score the options without an LLM (floor).

The BioASQ exact-answer step lives in :mod:`biorag.answer.exact`; its names are exported here
lazily (importing this package stays light).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ExactAnswer", "exact_answer", "exact_answer_floor", "exact_answer_llm"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from biorag.answer import exact  # lazy: answer.exact imports this package (cycle)

        return getattr(exact, name)
    raise AttributeError(f"module 'biorag.answer' has no attribute {name!r}")
