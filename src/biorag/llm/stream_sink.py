"""Where streamed answer text goes: :func:`stream_answers_to` (``biorag ask`` on a terminal, the
service's streamed asks) names a callback for the text of some stages; a backend that can stream
(:class:`~biorag.llm.openai.backend.OpenAIBackend`) asks :func:`active_sink` whether a request
is to be streamed, and to what.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from biorag.llm.types import ChatRequest

_sink: ContextVar[tuple[Callable[[str], None], frozenset[str]] | None] = ContextVar(
    "biorag_stream_sink", default=None
)


@contextmanager
def stream_answers_to(
    on_text: Callable[[str], None], stages: tuple[str, ...] = ("answer",)
) -> Iterator[None]:
    """Inside this block (and the tasks it starts), plain-text requests of ``stages`` to a
    backend that can stream are streamed, each piece handed to ``on_text``."""
    token = _sink.set((on_text, frozenset(stages)))
    try:
        yield
    finally:
        _sink.reset(token)


def active_sink(req: ChatRequest) -> Callable[[str], None] | None:
    """The callback to stream ``req`` to, when a block of :func:`stream_answers_to` asks for
    its stage and it is plain text."""
    sink = _sink.get()
    if sink is None or req.json_schema is not None or req.logprobs:
        return None
    on_text, stages = sink
    return on_text if req.stage in stages else None
