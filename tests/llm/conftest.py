"""Fixtures of the LLM-layer tests: settings in a temp home, a fake OpenAI server, a tiny model."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from biorag.config import LLMSettings, Settings


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """``make_settings(**llm_fields)``: Settings whose home (and LLM cache) is in tmp_path."""

    def make(**llm: Any) -> Settings:
        return Settings(home=str(tmp_path / "home"), llm=LLMSettings(**llm))

    return make


# An action the fake server takes for one request: (status, headers, JSON payload, delay_s).
Action = tuple[int, dict[str, str], Any, float]


def completion(content: str, body: dict[str, Any], prompt_tokens: int = 7) -> dict[str, Any]:
    """A chat-completions answer to ``body`` with usage, and logprobs when asked."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": "stop",
    }
    if body.get("logprobs"):
        n = int(body.get("top_logprobs") or 0)
        alts = [("Yes", -0.1), ("No", -2.5), ("Maybe", -4.0)][:n]
        choice["logprobs"] = {
            "content": [
                {
                    "token": tok,
                    "logprob": -0.1 if i == 0 else -0.5,
                    "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alts]
                    if i == 0
                    else [],
                }
                for i, tok in enumerate(content.split())
            ]
        }
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": body.get("model", "m"),
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(content.split()),
            "total_tokens": prompt_tokens + len(content.split()),
        },
    }


@dataclass
class FakeOpenAI:
    """A chat-completions server on 127.0.0.1 in a thread.

    ``script`` holds actions for the next requests (functions of the request body, or fixed
    actions); when it is empty ``default`` answers. ``requests`` records what was received.
    """

    url: str = ""
    script: deque[Action | Callable[[dict[str, Any]], Action]] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: GET routes (path -> JSON payload), e.g. ``/props`` to pose as llama.cpp; others are 404.
    get_routes: dict[str, Any] = field(default_factory=dict)
    #: POST routes other than chat completions (path -> function of the body -> JSON payload),
    #: e.g. ``/tokenize``; they are not recorded in ``requests``.
    post_routes: dict[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    default: Callable[[dict[str, Any]], Action] = lambda body: (
        200,
        {},
        completion("Yes it does", body),
        0.0,
    )

    completion = staticmethod(completion)

    def answer(self, body: dict[str, Any]) -> Action:
        if self.script:
            action = self.script.popleft()
            return action(body) if callable(action) else action
        return self.default(body)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server; ``.url`` is its ``/v1`` base URL."""
    fake = FakeOpenAI()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw or b"{}")
            route = fake.post_routes.get(self.path)
            if route is not None:
                data = json.dumps(route(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            with lock:
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                status, headers, payload, delay = fake.answer(body)
            if delay:
                time.sleep(delay)
            raw_body = isinstance(payload, bytes)  # sent as is (HTML, garbage)
            data = payload if raw_body else json.dumps(payload).encode()
            ctype = "text/html" if raw_body and data.lstrip()[:1] == b"<" else "application/json"
            if raw_body and data.startswith(b"data:"):
                ctype = "text/event-stream"
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (timeout test)
                pass

        def do_GET(self) -> None:
            payload = fake.get_routes.get(self.path)
            data = json.dumps(payload if payload is not None else {"error": "not found"}).encode()
            self.send_response(200 if payload is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def save_random_llama(
    path: Path, tok: Any, *, hidden: int, layers: int, heads: int, seed: int
) -> Path:
    """A random Llama of the given size for ``tok`` (with its special tokens), saved with the
    tokenizer under ``path``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=128,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama model with a word-level tokenizer and a chat template, on disk."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    sentences = [
        "the patient has a fever",
        "aspirin reduces fever and pain",
        "yes no maybe",
        "the gene regulates the protein",
        "user assistant system :",
    ]
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["<pad>", "<s>", "</s>", "<unk>"])
    tok.train_from_iterator(sentences, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant :{% endif %}"
    )
    path = tmp_path_factory.mktemp("tiny-llama")
    return save_random_llama(path, fast, hidden=32, layers=2, heads=2, seed=3)


@pytest.fixture
def llm_for(fake_openai: FakeOpenAI, make_settings: Callable[..., Any]) -> Callable[..., Any]:
    """An :class:`~biorag.llm.LLM` on the fake server (settings given as keywords)."""
    from biorag.llm import build_llm

    def make(**kw: Any) -> Any:
        fields = {
            "backend": "openai",
            "base_url": fake_openai.url,
            "model": "tiny",
            "max_retries": 1,
            "cache": False,
            **kw,
        }
        llm = build_llm(make_settings(**fields), retry_base_delay=0.01)
        assert llm is not None
        return llm

    return make
