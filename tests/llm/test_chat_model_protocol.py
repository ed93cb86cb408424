"""The composed client satisfies ChatModel, the protocol the stage operators are typed with."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from biorag.config import Settings
from biorag.llm import LLM, Accounting, ChatModel, ChatRequest, MockBackend, build_llm
from biorag.llm.accounting import note_fallback
from biorag.llm.shared import SharedLLM


def test_build_llm_gives_a_chat_model(
    tmp_path: Path, make_settings: Callable[..., Settings]
) -> None:
    llm = build_llm(make_settings(backend="mock", mock_script="dry-run", cache=False))
    assert llm is not None
    with llm:
        assert isinstance(llm, ChatModel)
        chat_model: ChatModel = llm  # mypy: LLM satisfies the protocol structurally
        assert chat_model.model == "dry-run"
    assert build_llm(make_settings()) is None  # backend "none": the no-LLM floor


def test_mock_backed_llm_is_a_chat_model(make_settings: Callable[..., Settings]) -> None:
    with LLM(MockBackend(rules=[{"response": "hello"}]), retry_base_delay=0.0) as llm:
        assert isinstance(llm, ChatModel)
        req = ChatRequest(messages=[{"role": "user", "content": "hi"}], stage="s")
        assert llm.run_sync(llm.chat(req)).text == "hello"
        note_fallback(llm, "s", 2)
        assert llm.accounting.stage("s").fallbacks == 2
    shared = SharedLLM(make_settings(backend="mock", mock_script="dry-run", cache=False))
    client = shared.client(Accounting())
    assert isinstance(client, ChatModel)
    client.close()


def test_what_is_not_a_chat_model() -> None:
    assert not isinstance(None, ChatModel)
    bare = MockBackend(rules=[{"response": "x"}])
    assert not isinstance(bare, ChatModel)  # a bare backend: no accounting, no chat_many
