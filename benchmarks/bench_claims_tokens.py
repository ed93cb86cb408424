"""Tokens and calls per CLAIMS question on SmolLM2-135M behind llama-server, for the code of two
commits on the same questions (the budgets and context fitting of the real-server issue, before
and after).

    python benchmarks/bench_claims_tokens.py --n 10 --before 502eed5

The other commit is checked out into a temporary worktree and run with PYTHONPATH pointing at
it (same virtual environment). Both runs use one llama-server (-c 8192, one slot, so the old
code's longer prompts fit), the bundled demo corpus (the first 40 PubMedQA abstracts, indexed
once with MiniLM) and the first N bundled questions. LLM cache off. Writes
benchmarks/results/claims_tokens_smollm2.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from devkit.servers import LlamaServer, llama_server_binary  # noqa: E402

DEMO = REPO / "src" / "biorag" / "demo" / "data"
OPTIONS = {"A": "yes", "B": "no", "C": "maybe"}


def ask(src: Path, env: dict[str, str], index: Path, mode: str, q: str) -> dict[str, Any]:
    e = dict(env, PYTHONPATH=str(src))
    start = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "biorag.cli.main", "ask", "--index", str(index), "--method",
         "claims", "--mode", mode, "--options", json.dumps(OPTIONS), "--json", q],
        env=e, capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if r.returncode != 0:
        return {"ok": False, "error": r.stderr.strip().splitlines()[-1:], "wall_s": wall}
    out = json.loads(r.stdout)
    t = out["accounting"]["total"]
    return {
        "ok": True,
        "answer": out["answer"],
        "calls": t["calls"],
        "tokens": t["prompt_tokens"] + t["completion_tokens"],
        "completion_tokens": t["completion_tokens"],
        "failures": t.get("failures", 0),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--before", default="502eed5", help="the commit to compare with")
    ap.add_argument("--modes", default="batched,faithful")
    args = ap.parse_args()
    from devkit.smollm2 import smollm2_gguf_path

    binary, why = llama_server_binary()
    gguf = smollm2_gguf_path()
    if binary is None or gguf is None:
        raise SystemExit(why or "SmolLM2 is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="claims_tokens_"))
    old = tmp / "before"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(old), args.before],
                   check=True, capture_output=True)  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(BIORAG_PROGRESS="0", BIORAG_HOME=str(tmp / "home"))
    corpus = tmp / "corpus.jsonl"
    corpus.write_text("\n".join((DEMO / "pubmedqa_sample.jsonl").read_text().splitlines()[:40]))
    index = tmp / "idx"
    subprocess.run([sys.executable, "-m", "biorag.cli.main", "index", "build", "--corpus",
                    str(corpus), "--out", str(index)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    server = LlamaServer(binary, gguf, ctx=8192, parallel=1, log_path=tmp / "server.log")
    qs = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines()[: args.n]]
    results: dict[str, Any] = {"n": args.n, "before": args.before, "runs": {}}
    try:
        server.wait_ready()
        llm_env = dict(
            env,
            BIORAG_LLM_BACKEND="openai",
            BIORAG_LLM_BASE_URL=server.url,
            BIORAG_LLM_MODEL="smollm2-135m",
            BIORAG_LLM_CACHE="false",
        )
        for mode in args.modes.split(","):
            for label, src in (("before", old / "src"), ("after", REPO / "src")):
                rows = [ask(src, llm_env, index, mode, q["question"]) for q in qs]
                ok = [r for r in rows if r["ok"]]
                toks = [r["tokens"] for r in ok]
                calls = [r["calls"] for r in ok]
                results["runs"][f"{mode}_{label}"] = {
                    "answered": sum(1 for r in ok if r["answer"] in OPTIONS),
                    "failed": len(rows) - len(ok),
                    "tokens_per_q_mean": round(statistics.mean(toks)) if toks else None,
                    "tokens_per_q_max": max(toks, default=None),
                    "calls_per_q_mean": round(statistics.mean(calls), 1) if calls else None,
                    "wall_s_p50": statistics.median(r["wall_s"] for r in rows),
                    "rows": rows,
                }
                print(mode, label, {k: v for k, v in results["runs"][f"{mode}_{label}"].items()
                                    if k != "rows"}, file=sys.stderr)  # fmt: skip
                out = REPO / "benchmarks" / "results" / "claims_tokens_smollm2.json"
                out.write_text(json.dumps(results, indent=1))
    finally:
        server.stop()
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)],
                       check=False, capture_output=True)  # fmt: skip


if __name__ == "__main__":
    main()
