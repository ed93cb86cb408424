"""Answer: read a context and answer (LLM reader), or score the options without an LLM (floor)."""
