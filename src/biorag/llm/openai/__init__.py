"""The ``openai`` LLM backend: any OpenAI-compatible chat-completions server over HTTP.

:mod:`~biorag.llm.openai.backend` (:class:`~biorag.llm.openai.backend.OpenAIBackend`),
:mod:`~biorag.llm.openai.streaming` (streamed answers, loops stopped at their onset),
:mod:`~biorag.llm.openai.errors` (reading a server's refusals),
:mod:`~biorag.llm.openai.server_info` (what a server is, found by asking it) and
:mod:`~biorag.llm.openai.structured` (the structured-output forms and their fallback chain).
"""
