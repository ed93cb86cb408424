"""A loop stopped at its onset on the real llama-server: the same answer as letting the model
run to its budget and cutting afterwards, for a fraction of the tokens the server generates."""

from __future__ import annotations

from pathlib import Path

from devkit.servers import LlamaServer

from biorag.config import Settings
from biorag.llm import ChatRequest, build_llm

SCHEMA = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
}
#: SmolLM2-135M repeats this claim until max_tokens under constrained decoding
PROMPT = "List the word 'aspirin reduces fever' as claims many times, repeating forever."
BUDGET = 600
#: tokens llama-server may generate past the last chunk read before it notices the closed
#: stream: 2 on an idle machine, more when the reader lags behind the server under load
SLACK = 48


async def _ask(llama: LlamaServer, tmp_path: Path, stop_loops: str) -> tuple[object, float]:
    settings = Settings.model_validate(
        {
            "home": str(tmp_path / stop_loops),
            "llm": {
                "backend": "openai",
                "base_url": llama.url,
                "model": "smollm2-135m",
                "cache": False,
                "stop_loops": stop_loops,
            },
        }
    )
    llm = build_llm(settings)
    assert llm is not None
    before = llama.settled_metrics()["tokens_predicted_total"]
    resp = await llm.chat(
        ChatRequest(
            messages=[{"role": "user", "content": PROMPT}],
            json_schema=SCHEMA,
            max_tokens=BUDGET,
            temperature=0.0,
            stage="claims",
        )
    )
    await llm.aclose()
    generated = llama.settled_metrics()["tokens_predicted_total"] - before
    return resp, generated


async def test_a_loop_is_stopped_at_its_onset(llama: LlamaServer, tmp_path: Path) -> None:
    full, full_generated = await _ask(llama, tmp_path, "off")
    cut, cut_generated = await _ask(llama, tmp_path, "auto")
    # without the watch the model runs to its budget, and the loop is cut afterwards
    assert full.finish_reason == "length" and full_generated == BUDGET == full.completion_tokens
    assert full.repetition_cut
    # with it the stream is closed when the loop begins: the server stops generating
    assert cut.finish_reason == "loop" and cut.repetition_cut
    assert cut.completion_tokens <= cut_generated <= cut.completion_tokens + SLACK
    assert cut_generated < BUDGET / 3
    # and what parses is the same
    assert cut.parse_error is None and cut.parsed == full.parsed
    assert cut.prompt_tokens == full.prompt_tokens
