"""Kill, resume, fill the disk, corrupt: does biorag keep its promises?

For each long command (index build, index add, kg build, strata build, eval) it measures an
uninterrupted reference run, then runs ``--trials`` more, each SIGKILLed (process group) at a
random moment of the reference duration, resumed by running the same command again, and
compared with the reference (retrieval results, exported triplets, graph counts, predictions
and scores). Then the failure modes: a full disk and a read-only output directory (small tmpfs
mounts; needs root, reported as not run otherwise) must give a one-line error and leave the
previous index usable, and a corrupted index or KG file must be named in the error.

Everything runs on the bundled demo sample with the no-LLM defaults, so no data or model is
needed beyond ``make install``::

    python benchmarks/bench_reliability.py --trials 20      # ~30 min on 2 cores

Results: benchmarks/results/reliability.json; the table is in docs/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from devkit.strata_vocab import MESH_XML, UNIPROT_TSV  # noqa: E402

DEMO = REPO / "src" / "biorag" / "demo" / "data"
#: when a trial is killed, as fractions of the reference run's duration (--kill-window)
KILL_WINDOW = (0.05, 0.95)
RESULTS = REPO / "benchmarks" / "results"


def biorag(args: list[str], env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [sys.executable, "-m", "biorag.cli.main", *args],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if check and r.returncode != 0:
        raise RuntimeError(f"biorag {' '.join(args)} failed: {r.stderr[-1500:]}")
    return r


def write_inputs(root: Path) -> dict[str, Path]:
    """The demo sample as a corpus (two halves), papers, QA pairs, a PubMedQA file, queries."""
    docs = [json.loads(x) for x in (DEMO / "pubmedqa_sample.jsonl").read_text().splitlines()]
    qs = [json.loads(x) for x in (DEMO / "questions.jsonl").read_text().splitlines()]
    by_id = {d["id"]: d for d in docs}
    files = {name: root / name for name in (
        "first.jsonl", "second.jsonl", "papers.jsonl", "qa.jsonl", "ori_pqal.json",
        "queries.jsonl", "desc.xml", "uniprot.tsv")}  # fmt: skip

    def lines(path: Path, rows: list[dict[str, Any]]) -> None:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    lines(files["first.jsonl"], docs[:120])
    lines(files["second.jsonl"], docs[120:])
    lines(
        files["papers.jsonl"],
        [{"pid": d["id"], "title": d.get("title", ""), "abstract": d["text"]} for d in docs[:60]],
    )
    lines(
        files["qa.jsonl"],
        [{"question": q["question"], "answer": q["options"][q["gold"]]} for q in qs],
    )
    lines(files["queries.jsonl"], [{"id": q["id"], "text": q["question"]} for q in qs])
    pqal = {q["id"]: {"QUESTION": q["question"], "CONTEXTS": [by_id[q["id"]]["text"]],
                      "LABELS": ["RESULTS"], "final_decision": q["options"][q["gold"]]}
            for q in qs[:12] if q["id"] in by_id}  # fmt: skip
    files["ori_pqal.json"].write_text(json.dumps(pqal), encoding="utf-8")
    files["desc.xml"].write_text(MESH_XML, encoding="utf-8")
    files["uniprot.tsv"].write_text(UNIPROT_TSV, encoding="utf-8")
    return files


@dataclass
class Op:
    """A long command: how to prepare its directory, run it, and read its result."""

    name: str
    setup: Callable[[Path], None]
    args: Callable[[Path], list[str]]
    result: Callable[[Path], Any]


def make_ops(inp: dict[str, Path], env: dict[str, str]) -> list[Op]:
    def retrieval(idx: Path) -> Any:
        run = idx.parent / "run.trec"
        biorag(["retrieve", "--index", str(idx), "--queries", str(inp["queries.jsonl"]),
                "--k", "5", "--level", "chunk", "--out", str(run)], env)  # fmt: skip
        stats = json.loads(biorag(["index", "stats", "--index", str(idx), "--json"], env).stdout)
        counts = {k: stats.get(k) for k in ("documents", "chunks", "chunks_embedded", "complete")}
        return {"run": run.read_text(), "counts": counts}

    base = inp["first.jsonl"].parent / "base_idx"

    def base_index(d: Path) -> None:
        """The first half indexed once, copied into each trial's directory."""
        if not (base / "manifest.json").is_file():
            biorag(["index", "build", "--corpus", str(inp["first.jsonl"]), "--out", str(base)],
                   env)  # fmt: skip
        shutil.copytree(base, d / "idx")

    def kg_result(d: Path) -> Any:
        out = d / "kg.jsonl"
        biorag(["kg", "export", "--kg", str(d / "kg"), "--format", "jsonl", "--out", str(out)],
               env)  # fmt: skip
        return sorted(out.read_text().splitlines())

    def strata_result(d: Path) -> Any:
        """Node and edge counts by type, and the entity relations as triplets (the directory's
        path, which stats also prints, differs between trials)."""
        stats = json.loads(
            biorag(["strata", "stats", "--strata", str(d / "strata"), "--json"], env).stdout
        )
        out = d / "strata.jsonl"
        biorag(["kg", "export", "--kg", str(d / "strata"), "--format", "jsonl", "--out",
                str(out)], env)  # fmt: skip
        return {"nodes": stats["nodes"], "edges": stats["edges"],
                "triplets": sorted(out.read_text().splitlines())}  # fmt: skip

    def eval_result(d: Path) -> Any:
        recs = [json.loads(x) for x in (d / "run" / "predictions.jsonl").read_text().splitlines()]
        latest = {(r["method"], r["question_id"]): (r["prediction"], r["error"]) for r in recs}
        metrics = json.loads((d / "run" / "metrics.json").read_text())
        scores = {m: {k: v for k, v in e.items() if k in ("accuracy", "macro_f1", "n", "errors")}
                  for m, e in metrics["methods"].items()}  # fmt: skip
        return {"predictions": sorted(latest.items()), "scores": scores, "lines": len(recs)}

    return [
        Op("index build", lambda d: None,
           lambda d: ["index", "build", "--corpus", str(inp["first.jsonl"]), "--out",
                      str(d / "idx")],
           lambda d: retrieval(d / "idx")),
        Op("index add", base_index,
           lambda d: ["index", "add", str(inp["second.jsonl"]), "--index", str(d / "idx")],
           lambda d: retrieval(d / "idx")),
        Op("kg build", lambda d: None,
           lambda d: ["kg", "build", "--from", str(inp["qa.jsonl"]), "--format", "jsonl",
                      "--out", str(d / "kg")],
           kg_result),
        Op("strata build", lambda d: None,
           lambda d: ["strata", "build", "--papers", str(inp["papers.jsonl"]), "--mesh",
                      str(inp["desc.xml"]), "--uniprot", str(inp["uniprot.tsv"]), "--out",
                      str(d / "strata")],
           strata_result),
        Op("eval", lambda d: None,
           lambda d: ["eval", "--dataset", "pubmedqa", "--data", str(inp["ori_pqal.json"]),
                      "--setting", "reasoning-required", "--methods",
                      "closed-book,retrieve-read,claims", "--out", str(d / "run")],
           eval_result),
    ]  # fmt: skip


def run_killed(args: list[str], env: dict[str, str], after_s: float) -> bool:
    """Start the command, SIGKILL its process group after ``after_s``; True if it was killed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "biorag.cli.main", *args], env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        proc.wait(timeout=after_s)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def trial_op(op: Op, env: dict[str, str], work: Path, trials: int, rng: random.Random) -> dict:
    ref_dir = work / f"{op.name.replace(' ', '_')}_ref"
    ref_dir.mkdir()
    op.setup(ref_dir)
    t = time.perf_counter()
    biorag(op.args(ref_dir), env)
    ref_s = time.perf_counter() - t
    reference = op.result(ref_dir)
    out: dict[str, Any] = {"reference_s": round(ref_s, 2), "trials": trials, "killed": 0,
                           "same_result": 0, "resume_failed": [], "different": [],
                           "resume_s": []}  # fmt: skip
    for i in range(trials):
        d = work / f"{op.name.replace(' ', '_')}_{i}"
        d.mkdir()
        op.setup(d)
        at = rng.uniform(*KILL_WINDOW) * ref_s
        out["killed"] += run_killed(op.args(d), env, at)
        t = time.perf_counter()
        r = biorag(op.args(d), env, check=False)
        out["resume_s"].append(round(time.perf_counter() - t, 2))
        if r.returncode != 0:
            out["resume_failed"].append(f"trial {i} (killed at {at:.1f}s): {r.stderr[-400:]}")
            continue
        if op.result(d) == reference:
            out["same_result"] += 1
        else:
            out["different"].append(f"trial {i} (killed at {at:.1f}s)")
        shutil.rmtree(d, ignore_errors=True)
    return out


def one_line_error(r: subprocess.CompletedProcess) -> bool:
    errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    return r.returncode != 0 and "Traceback" not in r.stderr and len(errors) == 1


def mounted(path: Path, size: str, ro: bool = False) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if ro else "")
    return subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)],
                          capture_output=True, check=False).returncode == 0  # fmt: skip


def disk_checks(inp: dict[str, Path], env: dict[str, str], work: Path) -> dict[str, Any]:
    """A full disk and a read-only directory under an existing index."""
    mnt = work / "small_disk"
    if not mounted(mnt, "12m"):
        return {"skipped": "mounting a tmpfs needs root; not run"}
    idx = mnt / "idx"

    def retrieve(name: str) -> str | None:
        out = work / name
        r = biorag(["retrieve", "--index", str(idx), "--queries", str(inp["queries.jsonl"]),
                    "--k", "5", "--out", str(out)], env, check=False)  # fmt: skip
        return out.read_text() if r.returncode == 0 else None

    def add_then_search(name: str, before: str | None) -> dict[str, Any]:
        """``index add`` into the broken directory, then search the index as it was."""
        r = biorag(["index", "add", str(inp["second.jsonl"]), "--index", str(idx)], env, False)
        if filler.exists():
            filler.unlink()  # the user frees space; the index must be as it was
        return {
            "one_line_error": one_line_error(r),
            "error": next((x for x in r.stderr.splitlines() if x.startswith("error:")), None),
            "stderr_tail": r.stderr.strip().splitlines()[-1:],
            "index_still_usable": before is not None and retrieve(name) == before,
        }

    out: dict[str, Any] = {}
    filler = mnt / "filler"
    try:
        biorag(["index", "build", "--corpus", str(inp["first.jsonl"]), "--out", str(idx)], env)
        before = retrieve("before.trec")
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
        out["full_disk"] = add_then_search("after.trec", before)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        out["read_only"] = add_then_search("after_ro.trec", before)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, check=False)
    return out


def corruption_checks(inp: dict[str, Path], env: dict[str, str], work: Path) -> dict[str, Any]:
    """Each file of an index or KG damaged in turn: the error must name it."""
    base = work / "corrupt_base"
    biorag(["index", "build", "--corpus", str(inp["first.jsonl"]), "--out", str(base / "idx")],
           env)  # fmt: skip
    biorag(["kg", "build", "--from", str(inp["qa.jsonl"]), "--format", "jsonl", "--out",
            str(base / "kg")], env)  # fmt: skip
    cases: dict[str, Any] = {}
    for kind, root, use in (
        ("index", "idx", lambda d: ["retrieve", "--index", str(d), "--queries",
                                    str(inp["queries.jsonl"]), "--out", str(d.parent / "x.trec")]),
        ("kg", "kg", lambda d: ["kg", "query", "--kg", str(d), "Does metformin lower glucose?"]),
    ):  # fmt: skip
        files = sorted(p for p in (base / root).rglob("*") if p.is_file())
        for n, f in enumerate(files):
            rel = f.relative_to(base / root)
            for damage in ("truncated", "garbage"):
                d = work / f"corrupt_{kind}_{damage}_{n}"
                shutil.copytree(base / root, d)
                target = d / rel
                data = target.read_bytes()
                target.write_bytes(data[: len(data) // 3] if damage == "truncated"
                                   else b"\x00garbage\xff" * 64)  # fmt: skip
                r = biorag(use(d), env, check=False)
                named = str(rel) in r.stderr or target.name in r.stderr
                cases[f"{kind}/{rel} {damage}"] = {
                    "rc": r.returncode,
                    "one_line_error": one_line_error(r),
                    "names_the_file": named,
                    "error": next((x for x in r.stderr.splitlines() if x.startswith("error:")),
                                  r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""),
                }  # fmt: skip
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--ops", default="index build,index add,kg build,strata build,eval")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--skip", default="", help="comma list of: kills,disk,corruption")
    ap.add_argument("--out", type=Path, default=RESULTS / "reliability.json")
    ap.add_argument("--kill-window", default="0.05,0.95", help="fractions of the reference")
    a = ap.parse_args()
    global KILL_WINDOW
    lo, hi = (float(x) for x in a.kill_window.split(","))
    KILL_WINDOW = (lo, hi)
    rng = random.Random(a.seed)
    skip = set(filter(None, a.skip.split(",")))
    report: dict[str, Any] = {"trials": a.trials, "seed": a.seed}
    with tempfile.TemporaryDirectory(prefix="biorag-reliability-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
        env.update(BIORAG_HOME=str(work / "home"), BIORAG_PROGRESS="0")
        inp = write_inputs(work)
        wanted = [x.strip() for x in a.ops.split(",") if x.strip()]
        if "kills" not in skip:
            report["kill_resume"] = {}
            for op in make_ops(inp, env):
                if op.name in wanted:
                    print(f"{op.name}: {a.trials} kill/resume trials", file=sys.stderr)
                    report["kill_resume"][op.name] = trial_op(op, env, work, a.trials, rng)
                    print(json.dumps(report["kill_resume"][op.name])[:400], file=sys.stderr)
        if "disk" not in skip:
            report["disk"] = disk_checks(inp, env, work)
        if "corruption" not in skip:
            report["corruption"] = corruption_checks(inp, env, work)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2)[:6000])


if __name__ == "__main__":
    main()
