"""How well the sentence verifiers (biorag.verify) tell supported from unsupported and
contradicted sentences, and what they cost, on a labelled set built from BioASQ
(``verify_set.py``: ideal-answer sentences against their gold snippets, against the nearest
other question's snippets, and with a number changed or a "not" added).

The rules verifier (each passage alone, then the cited passages together where none supports
alone: ``biorag.verify.joint``) has two thresholds, the pair of the best macro-F1 over the four
labels on the 7b-10b sentences (``dev``); both verifiers are then scored on the 11b sentences
(``test``, less its questions that reword a dev question), which nothing was tuned on. With
``--llm`` the LLM verifier is scored on the first ``--llm-per-class`` test items of each label,
through SmolLM2-135M-Instruct behind a llama-server this script starts (or ``--base-url`` and
``--model``: any OpenAI-compatible server).

    python benchmarks/bench_verify.py [--per-class 300] [--llm] [--llm-per-class 40]
        [--base-url URL --model NAME] [--out benchmarks/results/verify.json]

Per class: precision, recall and F1, macro-F1, and the accuracy of "fully supported or not";
the confusion of verdicts against labels; seconds per item; the LLM's tokens per item; and,
side by side in the same run, the rules verifier with each passage judged alone (tuned the
same way): the verifier before the joint check.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from _bench import pin_threads, provenance

THREADS = pin_threads()

from biorag.util.files import write_text_atomic  # noqa: E402
from biorag.verify.align import Thresholds, verify_pairs  # noqa: E402
from biorag.verify.joint import Joined, best_joined, joint_label  # noqa: E402
from biorag.verify.models import PassageVerdict  # noqa: E402
from biorag.verify.support import strongest, union_label  # noqa: E402
from verify_set import build  # noqa: E402

DATA = Path(os.environ.get("BIORAG_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared"
                           / "data"))  # fmt: skip
OUT = Path(__file__).parent / "results" / "verify.json"
CLASSES = ("supported", "partly_supported", "not_supported", "contradicted")


def scores(gold: list[str], predicted: list[str]) -> dict[str, Any]:
    """Per-class precision/recall/F1 and macro-F1, and the accuracy of "is this sentence fully
    supported" (supported against the three others): what a reader is told."""
    from sklearn.metrics import precision_recall_fscore_support

    p, r, f, n = precision_recall_fscore_support(
        gold, predicted, labels=list(CLASSES), zero_division=0
    )
    per = {
        c: {"precision": round(float(p[i]), 4), "recall": round(float(r[i]), 4),
            "f1": round(float(f[i]), 4), "n": int(n[i])}
        for i, c in enumerate(CLASSES)
    }  # fmt: skip
    flagged = sum(
        (g == "supported") == (q == "supported") for g, q in zip(gold, predicted, strict=True)
    )
    return {"classes": per, "macro_f1": round(float(f.mean()), 4),
            "supported_or_not_accuracy": round(flagged / max(len(gold), 1), 4)}  # fmt: skip


def confusion(gold: list[str], predicted: list[str]) -> dict[str, dict[str, int]]:
    return {g: {p: sum(1 for a, b in zip(gold, predicted, strict=True) if a == g and b == p)
                for p in (*CLASSES, "unread")} for g in CLASSES}  # fmt: skip


Scored = tuple[list[list[PassageVerdict]], list[Joined | None]]


def rules_scored(items: list[Any], embedder: Any, joint: bool = True) -> tuple[Scored, float]:
    """Each item's per-passage verdicts at threshold 0 (their scores and reasons; the labels are
    redone per threshold), its passages' best joined spans (``joint``; None where there are
    none), and the seconds it all took."""
    pairs = [(it.sentence, f"p{j}", p) for it in items for j, p in enumerate(it.passages)]
    start = time.perf_counter()
    flat = verify_pairs(pairs, embedder, Thresholds(supported=0.0, partial=0.0, contradicted=0.0))
    out, k = [], 0
    for it in items:
        out.append(flat[k : k + len(it.passages)])
        k += len(it.passages)
    joined = [best_joined(it.sentence, vs, embedder) if joint else None
              for it, vs in zip(items, out, strict=True)]  # fmt: skip
    return (out, joined), time.perf_counter() - start


def relabel(scored: Scored, th: Thresholds) -> list[str]:
    """The items' labels at ``th``: the strongest single-passage verdict, or the joint one
    where it is stronger (:func:`biorag.verify.joint.joint_label`)."""
    from biorag.verify.align import label_of

    out = []
    for vs, joined in zip(*scored, strict=True):
        single = strongest(label_of(v.score, v.reason, th) for v in vs)
        out.append(joint_label(single, joined, th) or single)
    return out


def tune(gold: list[str], scored: Scored) -> dict[str, Any]:
    """The thresholds of the best dev macro-F1 on a 0.02 grid over 0.30-0.90: (supported,
    partial) with contradictions allowed from ``partial`` up, then ``contradicted``."""
    grid = [round(0.30 + 0.02 * i, 2) for i in range(31)]

    def f1(th: Thresholds) -> float:
        return float(scores(gold, relabel(scored, th))["macro_f1"])

    s, p = max(
        ((s, p) for s in grid for p in grid if p <= s), key=lambda sp: f1(Thresholds(*sp, sp[1]))
    )
    c = max((c for c in grid if c >= p), key=lambda c: f1(Thresholds(s, p, c)))
    return {"supported": s, "partial": p, "contradicted": c, "grid": [grid[0], grid[-1], 0.02]}


def paired_ci(gold: list[str], a: list[str], b: list[str], n: int = 1000) -> dict[str, Any]:
    """95% paired-bootstrap intervals (items resampled, seed 0) of macro-F1(a) - macro-F1(b) and
    of the supported-F1 difference."""
    import numpy as np
    from sklearn.metrics import f1_score

    g, pa, pb = np.array(gold), np.array(a), np.array(b)
    rng = np.random.default_rng(0)
    macro, supported = [], []
    for _ in range(n):
        i = rng.integers(0, len(g), len(g))
        fa = f1_score(g[i], pa[i], labels=list(CLASSES), average=None, zero_division=0)
        fb = f1_score(g[i], pb[i], labels=list(CLASSES), average=None, zero_division=0)
        macro.append(fa.mean() - fb.mean())
        supported.append(fa[0] - fb[0])

    def q(xs: list[float]) -> list[float]:
        return [round(float(np.quantile(xs, x)), 4) for x in (0.025, 0.975)]

    return {"macro_f1_diff_ci95": q(macro), "supported_f1_diff_ci95": q(supported), "resamples": n}


def one_by_one(dev: list[Any], test: list[Any], emb: Any) -> dict[str, Any]:
    """The rules verifier with each passage judged alone (no joint check), tuned the same way:
    the verifier before the joint check, side by side."""
    dev_scored, _ = rules_scored(dev, emb, joint=False)
    chosen = tune([it.label for it in dev], dev_scored)
    th = Thresholds(chosen["supported"], chosen["partial"], chosen["contradicted"])
    test_scored, seconds = rules_scored(test, emb, joint=False)
    predicted = relabel(test_scored, th)
    return {"thresholds": chosen, "scores": scores([it.label for it in test], predicted),
            "seconds_per_item": round(seconds / max(len(test), 1), 4),
            "predicted": predicted}  # fmt: skip


def run_llm(items: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    from biorag.config import Settings
    from biorag.llm.factory import build_llm
    from biorag.verify.llm_verifier import Pair, verify_with_llm

    server = None
    base_url, model = args.base_url, args.model
    if base_url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from devkit.servers import LlamaServer, llama_server_binary
        from devkit.smollm2 import SMOLLM2_INSTALL, smollm2_gguf_path

        binary, why = llama_server_binary()
        gguf = smollm2_gguf_path()
        if binary is None or gguf is None:
            raise SystemExit(why if binary is None else f"SmolLM2 missing: {SMOLLM2_INSTALL}")
        server = LlamaServer(binary, gguf, ctx=8192, parallel=2)
        server.wait_ready()
        base_url, model = server.url, "smollm2-135m"
    settings = Settings.model_validate({"llm": {
        "backend": "openai", "base_url": base_url, "model": model, "cache": False,
        "concurrency": 2, "temperature": 0.0}})  # fmt: skip

    async def go() -> tuple[list[str], float, dict[str, Any]]:
        llm = build_llm(settings)
        assert llm is not None
        start = time.perf_counter()

        async def one(it: Any) -> str:
            pairs = [Pair(1, it.sentence, f"p{j}", p) for j, p in enumerate(it.passages)]
            got, _ = await verify_with_llm(llm, pairs)
            return union_label(list(got.values())) if got else "unread"

        labels = await asyncio.gather(*(one(it) for it in items))
        seconds = time.perf_counter() - start
        report = llm.accounting.report()
        await llm.aclose()
        return list(labels), seconds, report

    try:
        labels, seconds, report = asyncio.run(go())
    finally:
        if server is not None:
            server.stop()
    gold = [it.label for it in items]
    unread = sum(1 for p in labels if p == "unread")
    predicted = ["not_supported" if p == "unread" else p for p in labels]
    total = report["total"]
    return {
        "model": model, "n": len(items), "unreadable": unread,
        "scores": scores(gold, predicted),
        "confusion": confusion(gold, labels),
        "seconds_per_item": round(seconds / max(len(items), 1), 3),
        "tokens_per_item": round((total["prompt_tokens"] + total["completion_tokens"])
                                 / max(len(items), 1), 1),
        "calls": total["calls"],
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=300)
    ap.add_argument("--llm", action="store_true", help="also score the LLM verifier")
    ap.add_argument("--llm-per-class", type=int, default=40)
    ap.add_argument("--base-url")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--threads", default=THREADS)
    args = ap.parse_args()
    if not (DATA / "mirage").is_dir():
        ap.error(f"{DATA / 'mirage'} not found (set BIORAG_SHARED_DATA to the shared data folder)")
    from biorag.embed.st_embedder import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    dev, dev_vectors, _ = build(DATA, "dev", args.per_class, emb)
    test, _, reworded = build(DATA, "test", args.per_class, emb, avoid=dev_vectors)
    dev_verdicts, _ = rules_scored(dev, emb)
    chosen = tune([it.label for it in dev], dev_verdicts)
    th = Thresholds(chosen["supported"], chosen["partial"], chosen["contradicted"])
    test_verdicts, seconds = rules_scored(test, emb)
    gold = [it.label for it in test]
    predicted = relabel(test_verdicts, th)
    single = relabel((test_verdicts[0], [None] * len(test)), th)
    alone = one_by_one(dev, test, emb)
    how = {k: len(list(g)) for k, g in itertools.groupby(
        sorted(it.how for it in test if it.label == "contradicted"))}  # fmt: skip
    result: dict[str, Any] = {
        **provenance(),
        "set": {
            "dev": len(dev),
            "test": len(test),
            "per_class": args.per_class,
            "test_questions_left_out_as_rewordings_of_dev": reworded,
            "contradicted_by": how,
        },
        "thresholds": chosen,
        "rules": {
            "scores": scores(gold, predicted),
            "dev_scores": scores([it.label for it in dev], relabel(dev_verdicts, th)),
            "confusion": confusion(gold, predicted),
            "seconds_per_item": round(seconds / max(len(test), 1), 4),
            "passages_per_item": round(sum(len(it.passages) for it in test) / len(test), 2),
            "tokens_per_item": 0,
            "jointly_labelled": sum(p != q for p, q in zip(predicted, single, strict=True)),
        },
        "rules_one_by_one": alone,
        "joint_against_alone": paired_ci(gold, predicted, alone.pop("predicted")),
        "examples": [
            asdict(it) | {"predicted": p}
            for it, p in list(zip(test, predicted, strict=True))[:: max(len(test) // 12, 1)]
        ],
    }
    if args.llm:
        per = args.llm_per_class
        subset = [it for c in CLASSES for it in [x for x in test if x.label == c][:per]]
        result["llm"] = run_llm(subset, args)
        rules_sub = [p for it, p in zip(test, predicted, strict=True) if it in subset]
        result["rules_on_llm_subset"] = scores([it.label for it in subset], rules_sub)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out, json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("set", "thresholds")}, indent=1))
    print(json.dumps(result["rules"]["scores"], indent=1))
    if "llm" in result:
        print(json.dumps(result["llm"]["scores"], indent=1))


if __name__ == "__main__":
    main()
