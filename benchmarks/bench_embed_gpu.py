"""Large-batch embedding on a GPU against the CPU, with biorag's sentence-transformers embedder.

Texts: the bundled PubMedQA demo abstracts, cut into windows of ~120 words and repeated with a
running number until there are ``--n`` of them (the model sees distinct strings; lengths are
those of real chunks). For every device and batch size: texts per second over the whole set
(after a warm-up), and on CUDA the peak GPU memory. Modes: ``st`` is
``SentenceTransformer.encode`` (biorag's embedder with ``pipeline="off"``), ``st-half`` the same
with the model cast to float16, ``pipelined`` biorag's :class:`PipelinedEncoder` (tokenizing
ahead in a worker thread), ``pipelined-fp16`` the same under float16 autocast. Agreement:
cosine between each device's vectors and the CPU float32 vectors of the first ``--check``
texts (min and mean), which says whether a GPU-built index can be searched with CPU-embedded
queries.

    python benchmarks/bench_embed_gpu.py --model all-MiniLM-L6-v2 --n 50000 \
        --out benchmarks/results/embed_gpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "src" / "biorag" / "demo" / "data" / "pubmedqa_sample.jsonl"


def make_texts(n: int, words: int = 120) -> list[str]:
    """``n`` distinct chunk-sized texts from the demo abstracts."""
    windows: list[str] = []
    for line in DEMO.read_text(encoding="utf-8").splitlines():
        toks = json.loads(line)["text"].split()
        windows.extend(" ".join(toks[i : i + words]) for i in range(0, len(toks), words // 2))
    return [f"{windows[i % len(windows)]} ({i})" for i in range(n)]


MODES = {  # name -> (pipeline, precision, cast the model to half)
    "st": ("off", "float32", False),
    "st-half": ("off", "float32", True),
    "pipelined": ("on", "float32", False),
    "pipelined-fp16": ("on", "float16", False),
}


def run(model: str, device: str, texts: list[str], batch: int, mode: str) -> dict:
    import torch

    from biorag.embed.st_embedder import SentenceTransformerEmbedder

    pipeline, precision, half = MODES[mode]
    emb = SentenceTransformerEmbedder(
        model, device=device, batch_size=batch, pipeline=pipeline, precision=precision
    )
    st = emb._load()
    st.to(torch.float16 if half else torch.float32)
    emb.embed(texts[: 2 * batch])  # warm-up (and the pipelined encoder's tokenization check)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    vecs = emb.embed(texts)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    secs = time.perf_counter() - start
    row = {
        "device": device,
        "mode": mode,
        "batch_size": batch,
        "n": len(texts),
        "seconds": round(secs, 3),
        "texts_per_s": round(len(texts) / secs, 1),
    }
    if device.startswith("cuda"):
        row["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    st.to(torch.float32)
    return row | {"_vectors": vecs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--n", type=int, default=50_000, help="texts on the GPU")
    ap.add_argument("--n-cpu", type=int, default=5_000, help="texts on the CPU (slower)")
    ap.add_argument("--batch-sizes", default="64,256,1024")
    ap.add_argument("--check", type=int, default=512, help="texts compared across devices")
    ap.add_argument("--modes", default=",".join(MODES), help=f"of {', '.join(MODES)}")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    import torch

    texts = make_texts(max(args.n, args.n_cpu))
    sizes = [int(x) for x in args.batch_sizes.split(",")]
    rows = []
    ref = run(args.model, "cpu", texts[: args.n_cpu], 64, "st")
    rows.append(ref)
    ref_vecs = ref["_vectors"][: args.check]
    if torch.cuda.is_available():
        for mode in args.modes.split(","):
            for b in sizes:
                r = run(args.model, "cuda", texts[: args.n], b, mode)
                cos = np.sum(r["_vectors"][: args.check] * ref_vecs, axis=1)
                r["cos_vs_cpu_min"] = round(float(cos.min()), 6)
                r["cos_vs_cpu_mean"] = round(float(cos.mean()), 6)
                rows.append(r)
    else:
        print("no CUDA device: CPU row only", file=sys.stderr)
    for r in rows:
        r.pop("_vectors", None)
        print(json.dumps(r), file=sys.stderr)
    result = {
        "benchmark": "embed_gpu",
        "model": args.model,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cpu_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "rows": rows,
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
