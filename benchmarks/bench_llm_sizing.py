"""How many LLM endpoints a rate of questions needs, per method, from measured figures.

Two measurements, one computation:

1. **The endpoint** (``--measure``): llama-server with SmolLM2-135M-Instruct Q4_1, started as
   ``bench_real_llm.py`` starts it (``-c 8192 -np 2 -t 2``), is sent native ``/completion``
   requests with every slot busy: prefill-only requests (a prompt of ``--prompt-tokens``,
   one token out) give the prompt tokens/s it ingests; decode requests (a short prompt,
   ``--gen-tokens`` out, ``ignore_eos``) the tokens/s it generates. Rates are the server's own
   (``timings`` of each reply) summed over the slots, and the wall-clock rate beside them.
2. **The questions**: the ``predictions.jsonl`` of the ``bench_real_llm.py`` runs under
   ``--runs`` (SmolLM2, ``llm.structured_output = auto``, given context), per (dataset,
   method), the newest run: calls, prompt and completion tokens per question, from each
   record's accounting, with calls answered from biorag's cache counted at their stage's
   tokens per served call.
3. **Endpoint-seconds per question** = prompt tokens / prefill rate + completion tokens /
   decode rate; endpoints for 1 question/s = that number. It assumes the endpoint is kept busy
   (requests queued), as an eval with enough concurrency does.

    python benchmarks/bench_llm_sizing.py --measure --runs benchmarks/results/real_llm \\
        --kg-builds benchmarks/results/real_llm_summary_vgrag_n50.json \\
        --out benchmarks/results/llm_sizing.json

(``--endpoint benchmarks/results/llm_sizing.json`` instead of ``--measure`` recomputes from
the rates measured before.)

The figures are SmolLM2-135M's on 2 CPU cores: the tokens per question are what biorag's
prompts and budgets ask of a small model (a 7-8B model writes shorter, more parseable answers;
its prompts are the same size); the rates are this machine's. For a GPU endpoint, measure the
rates there with the same ``--measure`` against its URL (``--url``) and recompute.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _bench import provenance  # noqa: E402
from biorag.util.files import write_json_atomic  # noqa: E402
from figures.sizing import scaled  # noqa: E402

FILLER = (
    "Metformin lowers hepatic glucose production and improves insulin sensitivity in adults "
    "with type 2 diabetes; randomized trials report lower HbA1c and fewer cardiovascular events. "
)


def _post(root: str, body: dict[str, Any]) -> dict[str, Any]:
    import httpx

    r = httpx.post(f"{root}/completion", json=body, timeout=600)
    r.raise_for_status()
    return r.json()


def _tokens(root: str, text: str) -> int:
    import httpx

    return len(httpx.post(f"{root}/tokenize", json={"content": text}, timeout=60).json()["tokens"])


def _burst(root: str, body: dict[str, Any], slots: int, rounds: int) -> dict[str, Any]:
    """``rounds`` x ``slots`` requests, ``slots`` at a time; the server's per-request rates and
    the aggregate over the wall time."""
    replies: list[dict[str, Any]] = []
    t = time.perf_counter()
    with ThreadPoolExecutor(slots) as pool:
        for _ in range(rounds):
            replies += list(pool.map(lambda _: _post(root, body), range(slots)))
    wall = time.perf_counter() - t
    timings = [r["timings"] for r in replies]
    prompt = sum(x["prompt_n"] for x in timings)
    predicted = sum(x["predicted_n"] for x in timings)
    return {
        "requests": len(replies),
        "wall_s": round(wall, 2),
        "prompt_tokens": prompt,
        "predicted_tokens": predicted,
        "prompt_per_s_per_request": round(
            statistics.median(x["prompt_per_second"] for x in timings), 1
        ),
        "predicted_per_s_per_request": round(
            statistics.median(x["predicted_per_second"] for x in timings), 1
        ),
        "wall_prompt_per_s": round(prompt / wall, 1),
        "wall_predicted_per_s": round(predicted / wall, 1),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from devkit.servers import LlamaServer, llama_server_binary

    server = None
    root = args.url
    if root is None:
        from devkit.smollm2 import smollm2_gguf_path

        binary, why = llama_server_binary()
        gguf = smollm2_gguf_path()
        if binary is None or gguf is None:
            raise SystemExit(why or "SmolLM2 missing")
        server = LlamaServer(binary, gguf, ctx=8192, parallel=args.slots)
        server.wait_ready()
        root = server.root
    try:
        words = FILLER
        while _tokens(root, words) < args.prompt_tokens:
            words += FILLER
        n = _tokens(root, words)
        prefill = {"prompt": words, "n_predict": 1, "cache_prompt": False, "temperature": 0}
        decode = {"prompt": "List twenty drugs, one per line:", "n_predict": args.gen_tokens,
                  "ignore_eos": True, "cache_prompt": False, "temperature": 0}  # fmt: skip
        _post(root, {**prefill, "n_predict": 1})  # warm-up
        return {
            "server": "llama-server (SmolLM2-135M-Instruct Q4_1)" if server else root,
            "slots": args.slots,
            "prefill": {"prompt_tokens_each": n, **_burst(root, prefill, args.slots, args.rounds)},
            "decode": {
                "gen_tokens_each": args.gen_tokens,
                **_burst(root, decode, args.slots, args.rounds),
            },
        }
    finally:
        if server is not None:
            server.stop()


def per_question(runs: Path) -> dict[str, dict[str, Any]]:
    """Per ``dataset/method``: calls and tokens per question (:func:`figures.sizing.scaled`)
    from the newest run (by its predictions' modification time) that answered with that
    method, so runs of older code or other prompts are not mixed in."""
    newest: dict[str, tuple[float, str, int, dict[str, dict[str, float]]]] = {}
    for pred in sorted(runs.glob("*_auto_*/predictions.jsonl")):
        dataset = pred.parent.name.split("_auto_")[0]
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for line in pred.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                latest[(rec["method"], rec["question_id"])] = rec
        stages: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
        count: dict[str, int] = defaultdict(int)
        for (method, _), rec in latest.items():
            if rec.get("error"):
                continue
            count[method] += 1
            for stage, st in ((rec.get("accounting") or {}).get("stages") or {}).items():
                tot = stages[method].setdefault(stage, defaultdict(float))
                for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens"):
                    tot[k] += st.get(k, 0)
        mtime = pred.stat().st_mtime
        for method, n in count.items():
            key = f"{dataset}/{method}"
            if key not in newest or newest[key][0] < mtime:
                newest[key] = (mtime, pred.parent.name, n, stages[method])
    return {key: {"run": run, **scaled(st, n)} for key, (_, run, n, st) in sorted(newest.items())}


def per_abstract(summary: Path) -> dict[str, dict[str, Any]]:
    """The LLM kg builds of a ``bench_real_llm.py`` summary (``kg_builds``: VectorGraphRAG
    triplets from abstracts, one call per sentence): calls and tokens per abstract."""
    out = {}
    for name, b in json.loads(summary.read_text())["kg_builds"].items():
        total = b["accounting"]["total"]
        n = b["units"]
        out[f"kg build {name}"] = {
            "abstracts": n,
            "calls_per_abstract": round(total["calls"] / n, 2),
            "prompt_tokens_per_q": round(total["prompt_tokens"] / n),
            "completion_tokens_per_q": round(total["completion_tokens"] / n),
        }
    return out


def size(questions: dict[str, dict[str, Any]], endpoint: dict[str, Any]) -> None:
    """Add endpoint-seconds per question: the rates over the wall time with every slot busy
    (the server's per-request rates times the slots overstate it: slots share the cores)."""
    prefill = endpoint["prefill"]["wall_prompt_per_s"]
    decode = endpoint["decode"]["wall_predicted_per_s"]
    endpoint["sizing_rates"] = {"prompt_per_s": prefill, "predicted_per_s": decode}
    for q in questions.values():
        secs = q["prompt_tokens_per_q"] / prefill + q["completion_tokens_per_q"] / decode
        q["endpoint_s_per_q"] = round(secs, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--measure", action="store_true", help="measure the endpoint's rates")
    ap.add_argument("--url", default=None, help="a llama-server root URL (default: start one)")
    ap.add_argument("--endpoint", type=Path, default=None, help="rates measured before (JSON)")
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--prompt-tokens", type=int, default=1000)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--runs", type=Path, required=True, help="bench_real_llm.py's run folders")
    ap.add_argument("--kg-builds", type=Path, default=None,
                    help="a bench_real_llm.py summary with kg_builds (per abstract)")  # fmt: skip
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.measure:
        endpoint = measure(args)
    elif args.endpoint is not None:
        endpoint = json.loads(args.endpoint.read_text())["endpoint"]
    else:
        raise SystemExit("pass --measure, or --endpoint with an earlier result")
    questions = per_question(args.runs)
    size(questions, endpoint)
    builds = per_abstract(args.kg_builds) if args.kg_builds else {}
    size(builds, endpoint)  # "per_q" there is per abstract
    write_json_atomic(
        args.out,
        {**provenance(), "endpoint": endpoint, "questions": questions, "builds": builds},
    )
    for k, b in builds.items():
        print(f"{k}: {b}", file=sys.stderr)
    print(json.dumps(endpoint, indent=1), file=sys.stderr)
    for k, q in questions.items():
        print(f"{k}: {q}", file=sys.stderr)


if __name__ == "__main__":
    main()
