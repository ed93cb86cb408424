"""Entity deduplication: exact UPGMA vs blocked UPGMA, time, peak memory, identical clusters.

Data: N random unit vectors in 384-d around N/5 cluster centres (noise per cluster chosen so
that within-cluster cosines range about 0.73-0.92, i.e. on both sides of the 0.8 threshold;
a tenth of the centres are perturbed copies of other centres, cosine about 0.74, so some
candidate-graph components hold several true clusters). UPGMA has to make real decisions.

Each (method, N) runs in its own subprocess. "peak MB" is that process's peak RSS while it
clusters (VmHWM, reset after the data is generated; ru_maxrss of the whole process where the
reset is not allowed) and "extra MB" the peak minus the RSS before clustering. Time covers
clustering only (normalization, candidate search, linkage). For every N where both ran, the
blocked partition is compared with the exact one (identical partitions, adjusted Rand index).
The large size runs the blocked method only (exact UPGMA would need N^2/2 distances: 40 GB at
100k); ``--verify-large`` also runs it with the exact (flat) candidate graph, which by the
blocking argument gives the exact UPGMA partition, and compares the IVF run against it.

    python benchmarks/bench_dedup.py --out benchmarks/results/dedup.json
"""

from __future__ import annotations

import os
import sys

from _bench import pin_threads, reset_peak, status_gb

_THREADS = pin_threads()

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

DIM = 384


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def make_data(n: int, dim: int = DIM, seed: int = 0, per_cluster: int = 5) -> np.ndarray:
    """Clustered unit vectors (see the module docstring); deterministic in (n, dim, seed)."""
    rng = np.random.default_rng(seed)
    n_centres = max(1, n // per_cluster)
    centres = rng.standard_normal((n_centres, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    children = rng.choice(n_centres, size=n_centres // 10, replace=False)
    parents = rng.integers(0, n_centres, len(children))
    centres[children] = centres[parents] + 0.9 * rng.standard_normal((len(children), dim)).astype(
        np.float32
    ) / np.sqrt(dim)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    assign = rng.integers(0, n_centres, n)
    sigma = rng.uniform(0.3, 0.6, n_centres).astype(np.float32)[assign]
    x = centres[assign] + sigma[:, None] * rng.standard_normal((n, dim)).astype(
        np.float32
    ) / np.float32(np.sqrt(dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def worker(args: argparse.Namespace) -> None:
    """One clustering run; prints a JSON line and saves the labels."""
    from biorag.graph.upgma import cluster_vectors

    x = make_data(args.n, seed=args.seed)
    peak_was_reset = reset_peak()
    before = status_gb("VmRSS") * 1e6 / 1024
    t0 = time.perf_counter()
    if args.method == "exact":
        res = cluster_vectors(x, args.threshold, block_above=args.n)
    else:
        index = {"blocked": "auto", "blocked-flat": "flat", "blocked-ivf": "ivf"}[args.method]
        res = cluster_vectors(x, args.threshold, block_above=0, index=index)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    peak = (
        status_gb("VmHWM") * 1e6 / 1024
        if peak_was_reset
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    np.save(args.labels_out, res.labels)
    sizes = np.bincount(res.labels)
    print(
        json.dumps(
            {
                "method": args.method,
                "n": args.n,
                "seconds": round(seconds, 3),
                "peak_rss_mb": round(peak, 1),
                "extra_rss_mb": round(peak - before, 1),
                "peak_is_clustering_only": peak_was_reset,
                "clusters": int(res.n_clusters),
                "merged_clusters": int((sizes > 1).sum()),
                "largest_cluster": int(sizes.max()),
                "exact_guarantee": bool(res.exact),
                "stats": res.stats,
            }
        )
    )


def run_one(method: str, n: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    labels = tmp / f"{method}-{n}.npy"
    cmd = [sys.executable, __file__, "--worker", "--method", method, "--n", str(n)]
    cmd += ["--seed", str(args.seed), "--threshold", str(args.threshold)]
    cmd += ["--labels-out", str(labels), "--threads", _THREADS]
    log(f"{method} n={n} ...")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["labels_path"] = str(labels)
    log(f"  {row['seconds']} s, peak {row['peak_rss_mb']} MB, {row['clusters']} clusters")
    return row


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    from sklearn.metrics import adjusted_rand_score

    from biorag.graph.upgma import relabel_by_first_occurrence

    la = relabel_by_first_occurrence(np.load(a["labels_path"]))
    lb = relabel_by_first_occurrence(np.load(b["labels_path"]))
    return {
        "identical": bool(np.array_equal(la, lb)),
        "ari": round(float(adjusted_rand_score(la, lb)), 6),
        "entities_in_differing_clusters": int((la != lb).sum()),
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = "| method | N | seconds | peak MB | extra MB | clusters | merged | blocks | largest block | same as exact | ARI |"  # noqa: E501
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        st = r.get("stats", {})
        cmp = r.get("vs_exact") or r.get("vs_flat") or {}
        same = "" if not cmp else ("yes" if cmp["identical"] else "no")
        lines.append(
            f"| {r['method']} | {r['n']:,} | {r['seconds']:.2f} | {r['peak_rss_mb']:.0f} | "
            f"{r['extra_rss_mb']:.0f} | {r['clusters']:,} | {r['merged_clusters']:,} | "
            f"{st.get('blocks', '')} | {st.get('largest_block', '')} | {same} | "
            f"{cmp.get('ari', '')} |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    p.add_argument("--large", type=int, default=100_000, help="blocked-only size (0: skip)")
    p.add_argument("--verify-large", action="store_true", help="also run flat blocking at --large")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", default=_THREADS)
    p.add_argument("--json", action="store_true", help="print the JSON result on stdout")
    p.add_argument("--out", type=Path, help="write the JSON result here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--labels-out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return

    t0 = time.time()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_dedup_") as tmp_dir:
        tmp = Path(tmp_dir)
        for n in args.sizes:
            exact = run_one("exact", n, args, tmp)
            blocked = run_one("blocked", n, args, tmp)
            blocked["vs_exact"] = compare(exact, blocked)
            rows += [exact, blocked]
            if n == max(args.sizes):
                ivf = run_one("blocked-ivf", n, args, tmp)
                ivf["vs_exact"] = compare(exact, ivf)
                rows.append(ivf)
        if args.large:
            large = run_one("blocked", args.large, args, tmp)
            rows.append(large)
            if args.verify_large:
                flat = run_one("blocked-flat", args.large, args, tmp)
                large["vs_flat"] = compare(flat, large)
                rows.append(flat)
    for r in rows:
        r.pop("labels_path", None)
    import faiss
    import scipy

    result = {
        "command": "python " + " ".join(["benchmarks/bench_dedup.py", *sys.argv[1:]]),
        "machine": {
            "cpus": os.cpu_count(),
            "threads": int(_THREADS),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "faiss": faiss.__version__,
        },
        "dim": DIM,
        "threshold": args.threshold,
        "total_s": round(time.time() - t0, 1),
        "rows": rows,
        "table": table(rows),
    }
    print(result["table"], file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(result, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
