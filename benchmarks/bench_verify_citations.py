"""Citation quality of answers (biorag.verify): citation recall and precision per method, from
``biorag eval run`` on BioASQ 11b with the gold snippets given as the passages (``--setting
snippets``), as each run's ``metrics.json`` reports them.

Two readers: the no-LLM floor (extractive sentences, so what is measured is whether each
sentence cites the passage it came from) and SmolLM2-135M-Instruct behind a llama-server this
script starts (``retrieve-read``'s cited free-text answer; sentences it writes itself), checked
by the default verifier (``answer.verify = auto``) and, on fewer questions, by the model
(``answer.verifier = llm``).

    python benchmarks/bench_verify_citations.py [--n 50] [--n-llm-verifier 20]
        [--floor-methods retrieve-read,claims,iprar,selfrag,raptor] [--floor-only]

Writes ``benchmarks/results/verify_citations.json`` and the runs under
``benchmarks/results/verify_citations/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from _bench import provenance

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = Path(os.environ.get("BIORAG_SHARED_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "benchmarks" / "results"
RUNS = RESULTS / "verify_citations"
CACHE = ROOT / "benchmarks" / ".cache" / "verify_citations"


def eval_run(name: str, methods: str, n: int, env: dict[str, str]) -> tuple[dict[str, Any], str]:
    data = DATA / "mirage" / "rawdata" / "bioasq" / "Task11BGoldenEnriched"
    out = RUNS / name
    shutil.rmtree(out, ignore_errors=True)
    args = ["eval", "--dataset", "bioasq", "--data", str(data), "--setting",
            "snippets", "--methods", methods, "--limit", str(n), "--judge", "off", "--out",
            str(out)]  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "biorag.cli.main", *args], env=env, text=True,
                       capture_output=True, check=False)  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"eval {name} failed:\n{r.stderr[-3000:]}")
    for f in ("predictions.jsonl", ".run.lock"):
        (out / f).unlink(missing_ok=True)  # the records are large; metrics.json keeps the counts
    shown = (
        " ".join(["biorag", *args])
        .replace(str(DATA), "../shared/data")
        .replace(str(ROOT) + "/", "")
    )
    return json.loads((out / "metrics.json").read_text()), shown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--n-llm-verifier", type=int, default=20)
    ap.add_argument("--floor-methods", default="retrieve-read,claims,iprar,selfrag,raptor")
    ap.add_argument("--floor-only", action="store_true",
                    help="the no-LLM rows only (no llama-server; the SmolLM2 runs take about an "
                    "hour on 2 cores)")  # fmt: skip
    args = ap.parse_args()
    if not (DATA / "mirage").is_dir():
        ap.error(f"{DATA / 'mirage'} not found (set BIORAG_SHARED_DATA)")
    base = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    base.update(BIORAG_PROGRESS="0", BIORAG_HOME=str(CACHE / "home"))
    rows, commands = [], []

    def collect(metrics: dict[str, Any], reader: str) -> None:
        for m, e in metrics["methods"].items():
            if e.get("citations"):
                rows.append({"method": m, "reader": reader, "n": e["n"],
                             "citations": e["citations"]})  # fmt: skip

    metrics, cmd = eval_run("floor", args.floor_methods, args.n, base)
    collect(metrics, "no LLM (floor)")
    commands.append(cmd)
    if args.floor_only:
        return write(rows, commands)
    from devkit.servers import LlamaServer, llama_server_binary
    from devkit.smollm2 import SMOLLM2_INSTALL, smollm2_gguf_path

    binary, why = llama_server_binary()
    gguf = smollm2_gguf_path()
    if binary is None or gguf is None:
        raise SystemExit(why if binary is None else f"SmolLM2 missing: {SMOLLM2_INSTALL}")
    server = LlamaServer(binary, gguf, ctx=8192, parallel=2)
    try:
        server.wait_ready()
        llm = dict(base, BIORAG_LLM_BACKEND="openai", BIORAG_LLM_BASE_URL=server.url,
                   BIORAG_LLM_MODEL="smollm2-135m")  # fmt: skip
        metrics, cmd = eval_run("smollm2", "retrieve-read", args.n, llm)
        collect(metrics, "SmolLM2-135M (verify auto)")
        commands.append("BIORAG_LLM_BACKEND=openai BIORAG_LLM_MODEL=smollm2-135m " + cmd)
        env = dict(llm, BIORAG_ANSWER_VERIFY="on", BIORAG_ANSWER_VERIFIER="llm")
        metrics, cmd = eval_run("smollm2_llm_verifier", "retrieve-read", args.n_llm_verifier, env)
        collect(metrics, "SmolLM2-135M (verifier: the model)")
        commands.append(
            "BIORAG_LLM_BACKEND=openai BIORAG_LLM_MODEL=smollm2-135m BIORAG_ANSWER_VERIFY=on "
            "BIORAG_ANSWER_VERIFIER=llm " + cmd
        )
    finally:
        server.stop()
    write(rows, commands)


def write(rows: list[dict[str, Any]], commands: list[str]) -> None:
    out = {**provenance(), "dataset": "bioasq 11b, gold snippets given", "rows": rows,
           "commands": commands}  # fmt: skip
    from biorag.util.files import write_text_atomic

    write_text_atomic(RESULTS / "verify_citations.json", json.dumps(out, indent=1) + "\n")
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
