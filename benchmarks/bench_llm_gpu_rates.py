"""The prefill and decode rates of a 7-8B model on one GPU, for ``bench_llm_sizing.py``.

No 7-8B weights can be fetched here, and a dense transformer's speed does not depend on its
weights' values: the model is Llama-3.1-8B's architecture (32 layers, hidden 4096, 32 query and
8 key/value heads, MLP 14336, vocabulary 128,256) with random bf16 weights, built on the GPU.
It runs under transformers' ``generate`` with static batches (``slots`` prompts at a time, the
default SDPA attention and dynamic KV cache, no paged attention, no CUDA graphs): the rates a
plain in-process transformers endpoint gets, a floor under what a serving engine (vLLM,
llama.cpp's CUDA build) gets on the same card.

Measured as ``bench_llm_sizing.py --measure`` measures llama-server, per batch size:

* prefill: ``slots`` prompts of ``--prompt-tokens`` random token ids, one token out: prompt
  tokens/s over the wall time;
* decode: ``slots`` short prompts, ``--gen-tokens`` out each (end of sequence ignored):
  generated tokens/s over the wall time.

Each is the median of ``--rounds`` timed runs after one warm-up. The result's ``endpoint`` (the
row of ``--sizing-slots``) has the fields ``bench_llm_sizing.py --endpoint`` reads::

    python benchmarks/bench_llm_gpu_rates.py --out OUT.json            # on the GPU machine
    python benchmarks/bench_llm_sizing.py --endpoint OUT.json --runs benchmarks/results/real_llm \\
        --kg-builds benchmarks/results/real_llm_summary_vgrag_n50.json --out SIZING.json

``--tiny`` builds a two-layer model of the same code path (a check that runs on a CPU).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

LLAMA_31_8B = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
}
TINY = {**LLAMA_31_8B, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 32000}  # fmt: skip


def build(shape: dict[str, Any], device: str) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    config = LlamaConfig(**shape, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(default)
    return model.eval()


def _timed(model: Any, ids: Any, new_tokens: int, rounds: int) -> list[float]:
    import torch

    def once() -> float:
        if ids.is_cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
        if ids.is_cuda:
            torch.cuda.synchronize()
        assert out.shape[1] == ids.shape[1] + new_tokens, out.shape
        return time.perf_counter() - t

    with torch.inference_mode():
        once()  # warm-up
        return [once() for _ in range(rounds)]


def row(model: Any, slots: int, args: argparse.Namespace, device: str) -> dict[str, Any]:
    import torch

    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(slots)
    prompt = torch.randint(1000, vocab - 1, (slots, args.prompt_tokens), generator=g).to(device)
    short = torch.randint(1000, vocab - 1, (slots, 8), generator=g).to(device)
    pre = _timed(model, prompt, 1, args.rounds)
    dec = _timed(model, short, args.gen_tokens, args.rounds)
    pre_s, dec_s = statistics.median(pre), statistics.median(dec)
    out = {
        "slots": slots,
        "prefill": {
            "prompt_tokens_each": args.prompt_tokens,
            "runs_s": [round(x, 3) for x in pre],
            "wall_prompt_per_s": round(slots * args.prompt_tokens / pre_s, 1),
        },
        "decode": {
            "gen_tokens_each": args.gen_tokens,
            "runs_s": [round(x, 3) for x in dec],
            "wall_predicted_per_s": round(slots * args.gen_tokens / dec_s, 1),
            "per_sequence_per_s": round(args.gen_tokens / dec_s, 1),
        },
    }
    if device.startswith("cuda"):
        out["peak_gpu_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slots", default="1,8,32,64", help="batch sizes, comma-separated")
    ap.add_argument("--sizing-slots", type=int, default=32,
                    help="the batch size whose rates size the endpoints")  # fmt: skip
    ap.add_argument("--prompt-tokens", type=int, default=1000)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tiny", action="store_true", help="a two-layer model (a CPU check)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    import torch
    import transformers

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.tiny:
        raise SystemExit("no CUDA GPU: an 8B model is measured on a GPU (or pass --tiny)")
    t = time.perf_counter()
    model = build(TINY if args.tiny else LLAMA_31_8B, device)
    built_s = time.perf_counter() - t
    params = sum(p.numel() for p in model.parameters())
    result: dict[str, Any] = {
        "model": "Llama-3.1-8B shapes, random weights" if not args.tiny else "tiny Llama (check)",
        "parameters": params,
        "dtype": str(next(model.parameters()).dtype),
        "engine": f"transformers {transformers.__version__} generate, static batches, SDPA",
        "device": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor(),
        "torch": torch.__version__,
        "built_s": round(built_s, 1),
        "rows": [],
    }
    for slots in [int(s) for s in args.slots.split(",")]:
        result["rows"].append(row(model, slots, args, device))
        print(json.dumps(result["rows"][-1]), file=sys.stderr, flush=True)
        args.out.write_text(json.dumps(result, indent=1))  # what was measured, if cut off
    chosen = [r for r in result["rows"] if r["slots"] == args.sizing_slots] or result["rows"][-1:]
    result["endpoint"] = {"server": f"{result['model']} on {result['device']}", **chosen[0]}
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
