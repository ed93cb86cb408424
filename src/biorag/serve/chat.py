"""``POST /v1/chat/completions``: biorag as an OpenAI-compatible chat model.

The last user message is the question; ``model`` names the method (any other name, such as
``biorag``: the server's default method). The reply's content is the answer with numbered citations
``[n]`` and a source list; the full evidence rides along as ``evidence``. Streaming is not
served yet: ``stream: true`` is a clear 400.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from biorag.errors import BioragError
from biorag.serve.schemas import AskRequest, ChatRequest


def _question(body: ChatRequest) -> str:
    for message in reversed(body.messages):
        if message.role == "user" and message.content.strip():
            return message.content
    raise BioragError("the chat has no user message with text: nothing to answer")


def cited_text(answer: dict[str, Any]) -> str:
    """The answer's sentences with ``[n]`` markers for the evidence they cite, then the sources
    (PMIDs, or corpus and document id)."""
    from biorag.methods.base import cited_sentences

    evidence = answer.get("evidence") or []
    lines = cited_sentences(answer)
    body = " ".join(lines) or answer.get("answer_text") or answer.get("answer") or ""
    sources = []
    for i, e in enumerate(evidence, start=1):
        source = str(e.get("source_id") or e.get("doc_id") or "")
        sources.append(f"[{i}] {'PMID ' + source if source.isdigit() else source}")
    return body + ("\n\nSources:\n" + "\n".join(sources) if sources else "")


async def chat_completion(
    body: ChatRequest, ask: Callable[[AskRequest], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """The OpenAI ``chat.completion`` object answering ``body`` through ``ask``."""
    if body.stream:
        raise BioragError("stream: true is not served yet; ask without streaming")
    from pydantic import ValidationError

    from biorag.methods.registry import METHODS

    try:
        request = AskRequest(
            question=_question(body), method=body.model if body.model in METHODS else None
        )
    except ValidationError as e:
        raise BioragError(f"the last user message: {e.errors()[0]['msg']}") from None
    answer = await ask(request)
    usage = (answer.get("accounting") or {}).get("total") or {}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": f"biorag:{answer['method']}",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": cited_text(answer)},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
            "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
        },
        "evidence": answer.get("evidence") or [],
    }
