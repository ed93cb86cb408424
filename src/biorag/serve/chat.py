"""``POST /v1/chat/completions``: biorag as an OpenAI-compatible chat model.

The last user message is the question; ``model`` names the method (any other name, such as
``biorag``: the server's default method). The reply's content is the answer with numbered citations
``[n]`` and a source list; the full evidence rides along as ``evidence``. With ``stream: true``
the reply is ``chat.completion.chunk`` events (``data: {...}``, then ``data: [DONE]``): the role,
the cited answer sentence by sentence once the answer and its citations are known, and a last
chunk with ``finish_reason``, ``usage`` and ``evidence``; a failure mid-stream is an ``error``
object in a data line.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from biorag.errors import BioragError
from biorag.methods.base import cited_sentences, evidence_numbers
from biorag.methods.registry import DESCRIPTIONS, METHODS
from biorag.serve.schemas import AskRequest, ChatRequest

if TYPE_CHECKING:
    from biorag.serve.asking import Asker


def _question(body: ChatRequest) -> str:
    for i in reversed(range(len(body.messages))):
        message = body.messages[i]
        text = message.text(f"messages[{i}]") if message.role == "user" else ""
        if text.strip():
            return text
    raise BioragError("the chat has no user message with text: nothing to answer")


def model_list(default: str) -> list[dict[str, Any]]:
    """``GET /v1/models``' entries: every method, ``default`` first, with the first line of
    its description."""
    names = [default, *sorted(n for n in METHODS if n != default)]
    return [
        {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": "biorag",
            "description": DESCRIPTIONS[name],
        }
        for name in names
        if name in METHODS
    ]


def cited_text(answer: dict[str, Any]) -> str:
    """The answer's sentences with ``[n]`` markers for the evidence they cite, then the sources
    they cite (PMIDs, or corpus and document id; the passages retrieved and not cited are in
    ``evidence`` only). An answer with nothing to say says why (its notes)."""
    evidence = answer.get("evidence") or []
    lines = cited_sentences(answer)
    body = " ".join(lines) or answer.get("answer_text") or answer.get("answer") or ""
    if not body.strip():
        why = " ".join(answer.get("notes") or []) or "the method gave no answer"
        body = f"({answer.get('method', 'this method')} has no answer: {why})"
    cited = {int(n) for line in lines for n in re.findall(r"\[(\d+)\]", line)}
    sources = []
    backs = _backs(answer)
    for i, e in enumerate(evidence, start=1):
        if i not in cited:
            continue
        source = str(e.get("source_id") or e.get("doc_id") or "")
        sources.append(
            f"[{i}] {'PMID ' + source if source.isdigit() else source}{backs.get(i, '')}"
        )
    uncited = len(evidence) - len(sources)
    if uncited and sources:
        sources.append(f"({uncited} more retrieved, not cited: in the evidence)")
    return body + ("\n\nSources:\n" + "\n".join(sources) if sources else "")


def _backs(answer: dict[str, Any]) -> dict[int, str]:
    """Per source number, what it does for the sentences citing it (" - supports 1, 3;
    contradicts 2"), from the sentences' verdicts."""
    verbs = {"supported": "supports", "partly_supported": "partly supports",
             "not_supported": "does not support", "contradicted": "contradicts"}  # fmt: skip
    found: dict[int, dict[str, list[int]]] = {}
    for k, s in enumerate(support_of(answer)["sentences"], 1):
        together = set((s["joint"] or {}).get("sources") or []) - {None}
        for src in s["sources"]:
            n = src["n"]
            if n is None:
                continue
            verb = verbs[src["label"]]
            if n in together:  # what it says with the others, not alone
                others = " and ".join(f"[{m}]" for m in sorted(together - {n}))
                verb = f"{verbs[s['joint']['label']]} together with {others}"
            found.setdefault(n, {}).setdefault(verb, []).append(k)
    return {n: " - " + "; ".join(f"{verb} sentence {', '.join(map(str, ks))}"
                                 for verb, ks in by.items())
            for n, by in found.items()}  # fmt: skip


def support_of(answer: dict[str, Any]) -> dict[str, Any]:
    """The sentences' verdicts for a chat reply: each sentence's verdict over its citations and,
    per cited source (its ``[n]``), the verdict and deciding span; ``joint``: the sources that
    support it only together (their numbers), or None; and how they were checked."""
    number = evidence_numbers(answer)
    sentences = []
    for s in answer.get("sentences") or []:
        support = s.get("support") or {}
        sentences.append({
            "text": s["text"], "label": support.get("label"),
            "sources": [{"n": number.get(v["passage_id"]), "label": v["label"],
                         "span": (v.get("span") or {}).get("text"), "reason": v.get("reason", "")}
                        for v in support.get("verdicts") or []],
            "joint": ({"label": support["joint"]["label"],
                       "sources": [number.get(c) for c in support["joint"]["passage_ids"]]}
                      if support.get("joint") else None),
            "unknown_citations": support.get("unknown_citations") or [],
        })  # fmt: skip
    return {"sentences": sentences, "verification": answer.get("verification")}


def _ask_request(body: ChatRequest) -> AskRequest:
    from pydantic import ValidationError

    try:
        return AskRequest(
            question=_question(body), method=body.model if body.model in METHODS else None
        )
    except ValidationError as e:
        raise BioragError(f"the last user message: {e.errors()[0]['msg']}") from None


def _usage(answer: dict[str, Any]) -> dict[str, int]:
    total = (answer.get("accounting") or {}).get("total") or {}
    prompt, completion = total.get("prompt_tokens", 0), total.get("completion_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}  # fmt: skip


async def chat_completion(
    body: ChatRequest, asker: Asker, client: str = "", disconnected: Any = None
) -> dict[str, Any]:
    """The OpenAI ``chat.completion`` object answering ``body``."""
    answer = await asker.ask(_ask_request(body), client, disconnected)
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
        "usage": _usage(answer),
        "evidence": answer.get("evidence") or [],
        "support": support_of(answer),
    }


async def chat_stream(
    body: ChatRequest, asker: Asker, client: str = "", disconnected: Any = None
) -> AsyncIterator[str]:
    """The ``chat.completion.chunk`` events answering ``body`` (the ask starts now, so a bad
    one or a full queue fails before anything is sent)."""
    events = await asker.stream(_ask_request(body), client, disconnected=disconnected)
    options = (body.model_extra or {}).get("stream_options") or {}
    usage_chunk = isinstance(options, dict) and bool(options.get("include_usage"))
    return _chunks(events, f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), usage_chunk)


async def _chunks(
    events: AsyncIterator[tuple[str, dict[str, Any]]],
    chunk_id: str,
    created: int,
    usage_chunk: bool = False,
) -> AsyncIterator[str]:
    """The chunks; ``usage_chunk`` (``stream_options.include_usage``): as OpenAI does, one more
    chunk after the last, with no choices and the usage."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        data = {"id": chunk_id, "object": "chat.completion.chunk", "created": created,
                "model": model, "choices": [{"index": 0, "delta": delta,
                                             "finish_reason": finish}], **extra}  # fmt: skip
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    model = "biorag"
    yield chunk({"role": "assistant"})
    async for kind, data in events:
        if kind == "error":
            yield f"data: {json.dumps({'error': data})}\n\n"
        elif kind == "result":
            model = f"biorag:{data['method']}"
            text = cited_text(data)
            body, sep, sources = text.partition("\n\nSources:")
            for piece in _sentences(body):
                yield chunk({"content": piece})
            if sep:
                yield chunk({"content": sep + sources})
            yield chunk({}, "stop", usage=_usage(data), evidence=data.get("evidence") or [],
                        support=support_of(data))  # fmt: skip
            if usage_chunk:
                last = {"id": chunk_id, "object": "chat.completion.chunk", "created": created,
                        "model": model, "choices": [], "usage": _usage(data)}  # fmt: skip
                yield f"data: {json.dumps(last)}\n\n"
    yield "data: [DONE]\n\n"


def _sentences(text: str) -> list[str]:
    """``text`` in pieces that end after each sentence (joined, they are ``text``)."""
    return [p for p in re.split(r"(?<=[.!?\]])(?= )", text) if p]
