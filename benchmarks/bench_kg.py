"""VectorGraphRAG knowledge graph: build throughput, retrieval latency at scale, MedMCQA floor.

(a) synthetic scale-up (10k, 100k, 1M triplets by default). Entity names are 1-3 words drawn
    by frequency from the MedMCQA dev vocabulary (question and option words, stop words out),
    one name per 5 triplets, nested across scales (the 10k graph's names are the first of the
    100k graph's), so entities repeat (about 10 triplet ends each); subject, predicate (50
    phrases) and object are drawn uniformly. Two stores side by side: the embedded SQLite store
    (:class:`~biorag.kg.stores.flat_sqlite.SQLiteKGStore`) and an in-memory baseline (dicts and
    lists with the same lookups and the same results, :class:`MemoryKGStore`). Each (scale, store)
    runs in its own process.
    * build: triplets per second into the store (constructing the ``Triplet`` objects
      included), the process's peak RSS during the build (before the model is loaded) and the
      RSS the store keeps (RSS after minus before; SQLite keeps its data on disk).
    * entities embedded per second with the bundled all-MiniLM-L6-v2 (``EntityIndex.sync``,
      i.e. embedding + FAISS + files), for the first ``--embed-max`` names (the 100k graph's);
      a larger graph reuses those vectors and gets random unit vectors for its other names
      (they then match question terms only by exact name, never by similarity).
    * retrieval latency per question (real MedMCQA dev questions with their options; the
      first ``--questions`` single-choice ones, after a warm-up question): search terms ->
      entity matching (MiniLM for the terms, FAISS flat search, exact name lookups) -> the
      store's 1-hop lookup -> ranking (MiniLM for the candidate triplets and the question) ->
      top 300, as ``KGRetriever.retrieve`` does. Both stores must return the same triplets.
(b) MedMCQA dev single-choice, the no-LLM floor through the CLI: ``biorag kg build --half
    second`` (one rule-based triplet per QA pair from the explanation ``exp``), then ``biorag
    eval`` on the first ``--eval-limit`` questions (all in the first half) with closed-book and
    vectorgraphrag, ``--exclude-overlap`` (the eval's KG overlap guard leaves out any question
    that also went into the KG); and, as a control, the same questions over a KG built from
    their own half (``--half first``: the KG then holds their answers, scored on purpose with
    ``--allow-overlap``). Each run records the guard's finding (``kg_overlap``) and its scoring;
    the file records the commit of the biorag that ran and the command (``provenance``).

    python benchmarks/bench_kg.py --out benchmarks/results/kg.json
"""

from __future__ import annotations

import argparse
import os
import sys

from _bench import peak_gb, pin_threads, provenance, reset_peak, status_gb

_THREADS = pin_threads()

import contextlib  # noqa: E402
import gc  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from collections.abc import Iterable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import biorag  # noqa: E402
from biorag.kg.models import AddReport, Triplet  # noqa: E402
from biorag.kg.stores.interfaces import Direction, prepare_triplets, unique_keys  # noqa: E402

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
DEV = Path("/work/shared/data/mirage/rawdata/medmcqa/data/dev.json")
CACHE = ROOT / ".cache" / "kg_bench"
# The ``biorag`` console script of this interpreter's environment. It imports whatever biorag
# that environment installs (main's editable install: main's src/, even for a worktree), so the
# CLI runs get this process's biorag first on PYTHONPATH (:func:`medmcqa`): the package
# ``provenance()`` names the commit of (``_bench.biorag_commit``).
BIORAG = Path(sys.executable).parent / "biorag"
PREDICATES = [
    "treats", "causes", "is associated with", "is a", "inhibits", "activates", "is caused by",
    "is seen in", "is used for", "increases", "decreases", "is part of", "binds", "prevents",
    "is contraindicated in", "is diagnosed by", "is a side effect of", "is transmitted by",
    "supplies", "drains into", "is innervated by", "is derived from", "secretes", "regulates",
    "is a marker of", "is the drug of choice for", "presents with", "is located in",
    "metabolizes", "is deficient in", "is elevated in", "is a complication of", "produces",
    "is a risk factor for", "is the investigation of choice for", "is not seen in", "has",
    "is the most common cause of", "is absorbed in", "is excreted by", "interacts with",
    "crosses", "is a feature of", "is a type of", "is indicated in", "antagonizes",
    "is synthesized in", "is stored in", "is measured by", "is treated with",
]  # fmt: skip


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- memory ------------------------------------------------------------------------------------


# -- the in-memory baseline --------------------------------------------------------------------


class MemoryKGStore:
    """A plain-Python KGStore: entity key -> id dict, triplet rows in a list, adjacency lists.

    Same semantics as the SQLite store (one entity per normalized key, named as first given;
    one triplet per (subject, predicate key, object); results in insertion order).
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._names: list[str] = []
        self._rows: list[tuple[int, str, int, str, str]] = []
        self._seen: set[tuple[int, str, int]] = set()
        self._out: dict[int, list[int]] = defaultdict(list)
        self._in: dict[int, list[int]] = defaultdict(list)

    def _entity(self, name: str, key: str) -> int:
        eid = self._ids.get(key)
        if eid is None:
            eid = self._ids[key] = len(self._names)
            self._names.append(name)
        return eid

    def add_triplets(self, triplets: Iterable[Triplet]) -> AddReport:
        report = AddReport()
        for _, t in prepare_triplets(triplets, report):
            s = self._entity(t.subject, t.subject_key)
            o = self._entity(t.object, t.object_key)
            key = (s, t.predicate_key, o)
            if key in self._seen:
                report.duplicates += 1
                continue
            self._seen.add(key)
            i = len(self._rows)
            self._rows.append((s, t.predicate, o, t.source_id, t.model))
            self._out[s].append(i)
            self._in[o].append(i)
            report.added += 1
        return report

    def _triplet(self, i: int) -> Triplet:
        s, p, o, src, model = self._rows[i]
        return Triplet.model_construct(
            subject=self._names[s], predicate=p, object=self._names[o], source_id=src, model=model
        )

    def entities(self) -> list[str]:
        return list(self._names)

    def has_entity(self, name: str) -> bool:
        return bool(unique_keys([name])) and unique_keys([name])[0] in self._ids

    def triplets_for_entities(
        self, names: Iterable[str], direction: Direction = "out"
    ) -> list[Triplet]:
        found: set[int] = set()
        for key in unique_keys(names):
            eid = self._ids.get(key)
            if eid is None:
                continue
            found.update(self._out.get(eid, ()))
            if direction == "both":
                found.update(self._in.get(eid, ()))
        return [self._triplet(i) for i in sorted(found)]

    def iter_triplets(self) -> Iterator[Triplet]:
        return (self._triplet(i) for i in range(len(self._rows)))

    def count_triplets(self) -> int:
        return len(self._rows)

    def count_entities(self) -> int:
        return len(self._names)

    def close(self) -> None:
        pass


# -- synthetic data ----------------------------------------------------------------------------


def medmcqa_records() -> list[dict[str, Any]]:
    with DEV.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def vocabulary(records: list[dict[str, Any]]) -> tuple[list[str], np.ndarray]:
    """The question and option words (stop words out) and their frequencies, most frequent
    first."""
    from collections import Counter

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    counts: Counter[str] = Counter()
    for r in records:
        for k in ("question", "opa", "opb", "opc", "opd"):
            for w in re.findall(r"[a-z][a-z\-]*[a-z]", str(r.get(k) or "").lower()):
                if len(w) >= 3 and w not in ENGLISH_STOP_WORDS:
                    counts[w] += 1
    words = sorted(counts, key=lambda w: (-counts[w], w))
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return words, freq / freq.sum()


def entity_names(words: list[str], p: np.ndarray, n: int, seed: int = 0) -> list[str]:
    """``n`` distinct names of 1-3 words (30% / 50% / 20%) drawn by word frequency, in
    generation order (so a smaller graph's names are the first of a larger one's)."""
    rng = np.random.default_rng(seed)
    names: dict[str, None] = {}
    while len(names) < n:
        m = max(1024, 2 * (n - len(names)))
        lengths = rng.choice([1, 2, 3], size=m, p=[0.3, 0.5, 0.2])
        picks = rng.choice(len(words), size=(m, 3), p=p)
        for length, row in zip(lengths, picks, strict=True):
            names.setdefault(" ".join(words[j] for j in row[:length]), None)
            if len(names) >= n:
                break
    return list(names)


def synthetic_triplets(names: list[str], n: int, seed: int = 1) -> Iterator[Triplet]:
    rng = np.random.default_rng(seed)
    subj = rng.integers(0, len(names), size=n)
    obj = rng.integers(0, len(names), size=n)
    pred = rng.integers(0, len(PREDICATES), size=n)
    for i in range(n):
        yield Triplet(
            subject=names[subj[i]],
            predicate=PREDICATES[pred[i]],
            object=names[obj[i]],
            source_id=f"syn:{i}",
            model="synthetic",
        )


class TableEmbedder:
    """Vectors from a table for known names, the real model for everything else."""

    def __init__(self, inner: Any, table: dict[str, np.ndarray]) -> None:
        self.inner, self.table = inner, table
        self.model_id, self.dim = inner.model_id, inner.dim

    def embed(self, texts: list[str], **kw: Any) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        miss = [i for i, t in enumerate(texts) if t not in self.table]
        for i, t in enumerate(texts):
            if t in self.table:
                out[i] = self.table[t]
        if miss:
            out[miss] = self.inner.embed([texts[i] for i in miss])
        return out


# -- (a) the scale-up --------------------------------------------------------------------------


def p50(values: list[float]) -> float:
    return round(float(np.median(values)), 2) if values else float("nan")


def all_names(args: argparse.Namespace) -> tuple[list[str], int]:
    words, p = vocabulary(medmcqa_records())
    n_names = max(int(s) for s in args.scales.split(",")) // args.triplets_per_entity
    return entity_names(words, p, n_names), len(words)


def embedder_of(threads: str) -> Any:
    import torch

    from biorag.config import load_settings
    from biorag.embed.factory import build_embedder

    with contextlib.suppress(RuntimeError):
        torch.set_num_threads(int(threads))
    return build_embedder(load_settings(None).embed, None)  # no cache: real throughput


def worker(args: argparse.Namespace) -> None:
    """One (scale, store): build, then the entity index and the questions; prints a JSON row."""
    from biorag.corpus.datasets import load_dataset
    from biorag.kg.entity_index import EntityIndex
    from biorag.kg.retrieval import KGRetriever, search_terms
    from biorag.kg.stores.factory import open_store

    n, kind = args.scale, args.store
    names, _ = all_names(args)
    names = names[: n // args.triplets_per_entity]
    directory = CACHE / f"{kind}_{n}"
    shutil.rmtree(directory, ignore_errors=True)
    gc.collect()
    was_reset = reset_peak()
    before = status_gb("VmRSS")
    t0 = time.perf_counter()
    store = open_store(directory) if kind == "sqlite" else MemoryKGStore()
    rep = store.add_triplets(synthetic_triplets(names, n))
    build_s = time.perf_counter() - t0
    gc.collect()
    row: dict[str, Any] = {
        "triplets": n,
        "store": kind,
        "build_s": round(build_s, 2),
        "triplets_per_s": round(n / build_s),
        "added": rep.added,
        "duplicates": rep.duplicates,
        "entities": store.count_entities(),
        "build_peak_rss_gb": peak_gb() if was_reset else None,
        "store_rss_mb": round((status_gb("VmRSS") - before) * 1000, 1),
        "disk_mb": round(sum(f.stat().st_size for f in directory.glob("kg.sqlite*")) / 1e6, 1),
    }
    # the entity vectors: MiniLM's (computed once by the parent), random unit vectors beyond
    table_names = json.loads((CACHE / "table.json").read_text(encoding="utf-8"))
    vecs = np.load(CACHE / "table.npy")
    table = dict(zip(table_names, vecs, strict=True))
    entities = store.entities()
    extra = [e for e in entities if e not in table]
    rand = np.random.default_rng(2).standard_normal((len(extra), vecs.shape[1]))
    rand = (rand / np.linalg.norm(rand, axis=1, keepdims=True)).astype(np.float32)
    table.update(zip(extra, rand, strict=True))
    del vecs, rand
    embedder = embedder_of(args.threads)
    ix_dir = CACHE / f"entities_{kind}_{n}"
    shutil.rmtree(ix_dir, ignore_errors=True)
    t0 = time.perf_counter()
    index = EntityIndex.open(ix_dir, TableEmbedder(embedder, table))
    index.sync(entities, batch_size=len(entities) + 1)
    row["entity_index_s"] = round(time.perf_counter() - t0, 2)
    index.embedder = embedder  # question terms: the real model
    del table
    real = len(entities) - len(extra)
    row["entity_vectors"] = (
        "MiniLM" if not extra else f"MiniLM for {real}, random unit vectors for {len(extra)}"
    )
    items = load_dataset("medmcqa", DEV, limit=args.questions + 1).items
    retr = KGRetriever(store, index, embedder)
    t: dict[str, list[float]] = defaultdict(list)
    keys: list[list[tuple[str, str, str]]] = []
    reset_peak()
    for qi, it in enumerate(items):
        q, opts = it.question, list(it.options.values())
        t0 = time.perf_counter()
        terms = search_terms(q, opts)
        matched = retr.match_entities(terms)
        ents = list(dict.fromkeys(e for _, e, _ in matched))
        t1 = time.perf_counter()
        found = store.triplets_for_entities(ents, "out")
        t2 = time.perf_counter()
        unique = list({x.key(): x for x in found}.values())
        retr.rank(q, unique)
        t3 = time.perf_counter()
        keys.append([x.key() for x in found])
        if qi == 0:
            continue  # warm-up
        t["match"].append((t1 - t0) * 1000)
        t["lookup"].append((t2 - t1) * 1000)
        t["rank"].append((t3 - t2) * 1000)
        t["total"].append((t3 - t0) * 1000)
        t["terms"].append(len(terms))
        t["matched"].append(len(ents))
        t["candidates"].append(len(unique))
    row.update(
        {
            "questions": len(items) - 1,
            "lookup_p50_ms": p50(t["lookup"]),
            "retrieval_p50_ms": p50(t["total"]),
            "match_p50_ms": p50(t["match"]),
            "rank_p50_ms": p50(t["rank"]),
            "terms_p50": p50(t["terms"]),
            "matched_entities_p50": p50(t["matched"]),
            "candidates_p50": p50(t["candidates"]),
            "query_peak_rss_gb": peak_gb(),
            "result_digest": hashlib.sha256(json.dumps(keys).encode()).hexdigest()[:16],
        }
    )
    store.close()
    shutil.rmtree(directory, ignore_errors=True)
    shutil.rmtree(ix_dir, ignore_errors=True)
    print(json.dumps(row))


def scale_up(args: argparse.Namespace) -> dict[str, Any]:
    from biorag.kg.entity_index import EntityIndex

    names, n_words = all_names(args)
    log(f"vocabulary {n_words} words, {len(names)} entity names")
    # entity embedding throughput (MiniLM), once, for the names of the graphs up to embed_max
    n_embed = min(args.embed_max, len(names))
    embedder = embedder_of(args.threads)
    embedder.embed(names[:64])  # load the model
    d = CACHE / "embed"
    shutil.rmtree(d, ignore_errors=True)
    t0 = time.perf_counter()
    idx = EntityIndex.open(d, embedder)
    idx.sync(names[:n_embed])
    embed_s = time.perf_counter() - t0
    embedding = {
        "model": embedder.model_id,
        "entities": n_embed,
        "seconds": round(embed_s, 2),
        "entities_per_s": round(n_embed / embed_s, 1),
    }
    log(f"embedded {n_embed} entities in {embed_s:.1f} s")
    np.save(CACHE / "table.npy", idx.vectors)
    (CACHE / "table.json").write_text(json.dumps(idx.names), encoding="utf-8")
    shutil.rmtree(d, ignore_errors=True)
    del idx, embedder
    rows: list[dict[str, Any]] = []
    for n in (int(s) for s in args.scales.split(",")):
        for kind in ("sqlite", "memory"):
            log(f"scale {n:,} triplets, {kind} store ...")
            cmd = [sys.executable, __file__, "--worker", "--scale", str(n), "--store", kind]
            cmd += ["--scales", args.scales, "--questions", str(args.questions)]
            cmd += ["--triplets-per-entity", str(args.triplets_per_entity)]
            cmd += ["--threads", args.threads]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                raise SystemExit(f"worker {n} {kind} failed:\n{res.stderr[-3000:]}")
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
            log(f"  {rows[-1]}")
        a, b = rows[-2:]
        a["same_results"] = b["same_results"] = a["result_digest"] == b["result_digest"]
    return {
        "vocabulary_words": n_words,
        "triplets_per_entity": args.triplets_per_entity,
        "entity_embedding": embedding,
        "rows": rows,
    }


# -- (b) MedMCQA through the CLI ---------------------------------------------------------------


def kg_prefix() -> list[str]:
    """``biorag kg``, or the same commands through ``python -m biorag.cli.kg_cmd`` while
    ``kg`` is not registered in the installed ``biorag``."""
    res = subprocess.run([str(BIORAG), "kg", "--help"], capture_output=True, text=True)
    if res.returncode == 0:
        return [str(BIORAG), "kg"]
    return [sys.executable, "-m", "biorag.cli.kg_cmd"]


def cli(args: list[str], env: dict[str, str], kg: list[str]) -> tuple[str, float, str]:
    """Run ``biorag ARGS`` (``kg ...`` through ``kg``, see :func:`kg_prefix`); returns stdout,
    seconds and the command as typed (paths repo-relative)."""
    argv = [*kg, *args[1:]] if args[0] == "kg" else [str(BIORAG), *args]
    cmd = shlex.join(["biorag", *args]).replace(str(REPO) + "/", "")
    log(f"$ {cmd}")
    t0 = time.perf_counter()
    res = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed:\n{res.stderr[-3000:]}")
    return res.stdout, seconds, cmd


SCORING = "official"  # the MedMCQA runs' scoring (biorag eval --scoring)
KG_KEYS = (
    "units_kept", "extracted", "added", "duplicates", "dropped_count", "triplets_total",
    "entities_total", "entities_embedded", "seconds",
)  # fmt: skip


def overlap_of(metrics: dict[str, Any]) -> dict[str, Any]:
    """What the eval's KG overlap guard found (``metrics.json``'s ``kg_overlap``): the policy,
    how many of the questions went into the KG, how many were scored."""
    ov = metrics.get("kg_overlap") or {}
    return {k: ov.get(k) for k in ("policy", "overlapping", "scored", "note")}


def medmcqa(args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "BIORAG_PROGRESS": "0", "BIORAG_HOME": str(CACHE / "home")}
    # the CLI imports the biorag this process imports (whose commit provenance records), not
    # the one the environment installs
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(biorag.__file__).resolve().parents[1]), env.get("PYTHONPATH")) if p
    )
    for k in [k for k in env if k.startswith("BIORAG_LLM_")]:
        del env[k]  # the no-LLM floor, whatever the caller's environment says
    shutil.rmtree(CACHE / "home", ignore_errors=True)
    kg = kg_prefix()
    out: dict[str, Any] = {"label": "no-LLM floor", "questions": args.eval_limit, "runs": []}
    if kg[0] == sys.executable:
        out["note"] = "kg commands ran as python -m biorag.cli.kg_cmd (not registered yet)"
    for half, methods in (("second", "closed-book,vectorgraphrag"), ("first", "vectorgraphrag")):
        kg_dir = CACHE / f"kg_medmcqa_dev_{half}"
        run = CACHE / f"eval_medmcqa_kg_{half}"
        shutil.rmtree(kg_dir, ignore_errors=True)
        shutil.rmtree(run, ignore_errors=True)
        build = [
            "kg",
            "build",
            "--from",
            os.path.relpath(DEV, REPO),
            "--format",
            "medmcqa",
            "--half",
            half,
        ]
        stdout, build_s, build_cmd = cli([*build, "--out", str(kg_dir), "--json"], env, kg)
        rep = json.loads(stdout)
        opts = json.dumps({"vectorgraphrag": {"kg": str(kg_dir.relative_to(REPO))}})
        ev = ["eval", "--dataset", "medmcqa", "--data", os.path.relpath(DEV, REPO)]
        ev += ["--methods", methods]
        ev += ["--method-options", opts, "--limit", str(args.eval_limit), "--scoring", SCORING]
        if half == "first":  # the control: a KG that holds the answers, scored on purpose
            ev += ["--allow-overlap"]
        else:  # a few first-half questions repeat second-half ones word for word: left out
            ev += ["--exclude-overlap"]
        stdout, eval_s, eval_cmd = cli([*ev, "--out", str(run), "--json"], env, kg)
        metrics = json.loads(stdout)
        out["runs"].append(
            {
                "kg_half": half,
                "kg": {k: rep[k] for k in KG_KEYS},
                "kg_build_wall_s": round(build_s, 1),
                "entities_embedded_per_s": round(
                    rep["entities_embedded"] / max(rep["seconds"]["embed_entities"], 1e-9), 1
                ),
                "scoring": metrics.get("scoring"),
                "kg_overlap": overlap_of(metrics),
                "methods": {
                    m: {
                        k: e.get(k)
                        for k in ("accuracy", "n", "answered", "errors", "seconds_per_question")
                    }
                    for m, e in metrics["methods"].items()
                },
                "eval_wall_s": round(eval_s, 1),
                "commands": [build_cmd, eval_cmd],
            }
        )
    return out


# -- report ------------------------------------------------------------------------------------


def markdown(result: dict[str, Any]) -> str:
    lines: list[str] = []
    syn = result.get("synthetic")
    if syn:
        e = syn["entity_embedding"]
        lines += [
            f"Synthetic KG scale-up ({syn['vocabulary_words']:,}-word MedMCQA vocabulary, one "
            f"entity name per {syn['triplets_per_entity']} triplets; "
            f"{result['machine']['threads']} threads). Entities embedded with MiniLM: "
            f"{e['entities_per_s']}/s ({e['entities']:,} names in {e['seconds']} s, "
            "EntityIndex.sync). Retrieval: p50 over "
            f"{syn['rows'][0]['questions']} MedMCQA dev questions with their options = entity "
            "matching (MiniLM for the terms + FAISS) + the store's lookup + ranking (MiniLM for "
            "the candidates), top 300.",
            "",
            "| triplets | store | build triplets/s | build peak RSS GB | store RSS MB | disk MB"
            " | lookup p50 ms | retrieval p50 ms | match / rank p50 ms | matched entities /"
            " candidates p50 | query peak RSS GB | entity vectors |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in syn["rows"]:
            lines.append(
                f"| {r['triplets']:,} | {r['store']} | {r['triplets_per_s']:,} | "
                f"{r['build_peak_rss_gb']} | {r['store_rss_mb']} | {r['disk_mb']} | "
                f"{r['lookup_p50_ms']} | {r['retrieval_p50_ms']} | {r['match_p50_ms']} / "
                f"{r['rank_p50_ms']} | {r['matched_entities_p50']} / {r['candidates_p50']} | "
                f"{r['query_peak_rss_gb']} | {r['entity_vectors']} |"
            )
        same = all(r.get("same_results") for r in syn["rows"])
        lines += ["", f"Both stores returned the same triplets for every question: {same}."]
    mm = result.get("medmcqa")
    if mm:
        lines += [
            "",
            f"MedMCQA dev single-choice, {mm['label']} (no LLM anywhere): the first "
            f"{mm['questions']} questions (first half); KG from the other half's explanations "
            "(rule-based triplets), and the control KG from their own half.",
            "",
            "| KG from | triplets | entities | method | accuracy | s/question |",
            "|---|---|---|---|---|---|",
        ]
        for r in mm["runs"]:
            for m, e in r["methods"].items():
                lines.append(
                    f"| {r['kg_half']} half | {r['kg']['triplets_total']} | "
                    f"{r['kg']['entities_total']} | {m} | {e['accuracy']:.3f} | "
                    f"{e['seconds_per_question']} |"
                )
        lines += ["", "Commands:", ""]
        for r in mm["runs"]:
            lines += [f"    {c}" for c in r["commands"]]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="10000,100000,1000000")
    ap.add_argument("--triplets-per-entity", type=int, default=5)
    ap.add_argument("--embed-max", type=int, default=20000, help="names embedded with MiniLM")
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--eval-limit", type=int, default=1000)
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--skip-medmcqa", action="store_true")
    ap.add_argument("--threads", default=_THREADS)
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "kg.json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--scale", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--store", choices=("sqlite", "memory"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    start = time.perf_counter()
    CACHE.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "threads": int(args.threads),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "command": "python " + shlex.join(["benchmarks/bench_kg.py", *sys.argv[1:]]),
        "provenance": {
            **provenance(),
            "command": "python " + shlex.join(["benchmarks/bench_kg.py", *sys.argv[1:]]),
            "scoring": SCORING,
        },
    }
    if not args.skip_synthetic:
        result["synthetic"] = scale_up(args)
    if not args.skip_medmcqa:
        result["medmcqa"] = medmcqa(args)
    result["seconds_total"] = round(time.perf_counter() - start, 1)
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(markdown(result))
    log(f"done in {result['seconds_total']} s -> {args.out}")


if __name__ == "__main__":
    main()
