"""What the no-LLM claim extractor emits, before and after its claim rules
(``biorag.extract.rule_claims.claim_problem``): on the demo's 200 bundled abstracts and on 200
other PubMedQA abstracts (``../shared/data/pubmedqa/ori_pqal.json``, the first 200 PMIDs not in
the demo sample, their contexts joined).

Before (``strict=False``: the rules of the previous release) every clause is classified by
``claim_problem``: the share that is a well-formed claim by those rules, and what the rest are
(questions, enumeration items, verbless fragments, subjects that name no entity). After
(``strict=True``, the default) none of those can remain, by construction; so a seeded sample of
the kept claims is written out to be read (``sample``). Triples: how many claims get one (an
entity that names nothing, ``biorag.extract.patterns.is_entity``, now gives none).

    python benchmarks/bench_rule_claims.py [--sample 40]
"""

from __future__ import annotations

import argparse
import json
import os
import random
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

from _bench import provenance
from biorag.extract.patterns import pattern_triple
from biorag.extract.rule_claims import RuleClaimExtractor, claim_problem
from biorag.util.files import write_text_atomic

DATA = Path(os.environ.get("BIORAG_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared"
                           / "data"))  # fmt: skip
OUT = Path(__file__).parent / "results" / "rule_claims.json"


def demo_texts() -> tuple[list[str], set[str]]:
    raw = resources.files("biorag.demo.data").joinpath("pubmedqa_sample.jsonl")
    rows = [json.loads(x) for x in raw.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [r["text"] for r in rows], {str(r["id"]) for r in rows}


def pubmedqa_texts(skip: set[str], n: int = 200) -> list[str]:
    data = json.loads((DATA / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))
    pmids = [p for p in sorted(data) if p not in skip][:n]
    return ["\n".join(data[p]["CONTEXTS"]) for p in pmids]


def measure(texts: list[str], sample: int, seed: int = 7) -> dict[str, Any]:
    out: dict[str, Any] = {"abstracts": len(texts)}
    for name, strict in (("before", False), ("after", True)):
        ex = RuleClaimExtractor(strict=strict)
        claims = [c for t in texts for c, _ in ex.claim_texts(t)]
        problems = Counter(claim_problem(c) or "claim" for c in claims)
        triples = [t for c in claims if (t := pattern_triple(c)) is not None]
        ents = [e for t in triples for e in (t.subject, t.object)]
        out[name] = {
            "claims": len(claims),
            "well_formed": problems["claim"],
            "well_formed_share": round(problems["claim"] / max(len(claims), 1), 4),
            "problems": {k: v for k, v in problems.most_common() if k != "claim"},
            "triples": len(triples),
            "claims_with_a_triple_share": round(len(triples) / max(len(claims), 1), 4),
            "distinct_entities": len(set(ents)),
        }
        if strict:
            out["sample"] = random.Random(seed).sample(claims, min(sample, len(claims)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=40)
    args = ap.parse_args()
    demo, ids = demo_texts()
    result: dict[str, Any] = {**provenance(), "demo": measure(demo, args.sample)}
    if (DATA / "pubmedqa").is_dir():
        result["pubmedqa"] = measure(pubmedqa_texts(ids), args.sample)
    write_text_atomic(OUT, json.dumps(result, indent=1) + "\n")
    for k in ("demo", "pubmedqa"):
        if k in result:
            print(k, json.dumps({s: result[k][s] for s in ("before", "after")}, indent=1))


if __name__ == "__main__":
    main()
