#!/usr/bin/env bash
# VectorGraphRAG's sweeps (paper figures 3 and 4): accuracy against the number of triplets given
# to the reader (top_n) and against the number of similar entities per search term (k), each
# point one resumable `biorag eval` run, then one merged report per sweep.
#
#   benchmarks/run_vgrag_sweeps.sh                 # the no-LLM floor, 20 questions per point
#   LIMIT=500 BIORAG_LLM_BASE_URL=http://localhost:8000/v1 BIORAG_LLM_MODEL=my-model \
#     benchmarks/run_vgrag_sweeps.sh               # any OpenAI-compatible endpoint
#
# The KG is built (once) from TRAIN, MedMCQA's train file (official JSON Lines), as the paper
# does, when it is set; else from the dev explanations of the second half of the single-choice
# questions, and then only the questions that did not go into the KG are scored
# (--exclude-overlap: the first half). Settings (environment): TRAIN, DATA, KG, LIMIT, TOP_NS, KS, K (fixed during the
# top_n sweep), TOP_N (fixed during the k sweep), RUNS, CONCURRENCY; BIORAG_LLM_* for the reader
# (and for the KG extraction when the KG is built). Run directories resume: run it again after
# an interruption. Points of another model go to their own folder (RUNS ends in the model name).
set -euo pipefail
cd "$(dirname "$0")/.."
BIORAG=${BIORAG:-.venv/bin/biorag}
PY=${PY:-.venv/bin/python}
DATA=${DATA:-../shared/data/mirage/rawdata/medmcqa/data/dev.json}
TRAIN=${TRAIN:-}
if [ -n "$TRAIN" ]; then
    KG=${KG:-benchmarks/.cache/kg/medmcqa_train}
else
    KG=${KG:-benchmarks/.cache/kg/medmcqa_dev_second}
fi
LIMIT=${LIMIT:-20}
TOP_NS=${TOP_NS:-10 30 100 300 1000}
KS=${KS:-1 3 10 30}
K=${K:-10}
TOP_N=${TOP_N:-300}
CONCURRENCY=${CONCURRENCY:-4}
MODEL_TAG=$(printf '%s' "${BIORAG_LLM_MODEL:-floor}" | tr -c 'A-Za-z0-9._-' '_')
RUNS=${RUNS:-runs/vgrag_sweeps/$MODEL_TAG}
export BIORAG_PROGRESS=${BIORAG_PROGRESS:-0}

if [ ! -f "$KG/kg.sqlite" ]; then
    if [ -n "$TRAIN" ]; then
        "$BIORAG" kg build --from "$TRAIN" --format medmcqa --out "$KG"
    else
        "$BIORAG" kg build --from "$DATA" --format medmcqa --half second --out "$KG"
    fi
fi

point() {  # point NAME JSON_OPTIONS
    local t=$SECONDS
    "$BIORAG" eval --dataset medmcqa --data "$DATA" --methods vectorgraphrag \
        --method-options "{\"vectorgraphrag\": $2}" --limit "$LIMIT" \
        --concurrency "$CONCURRENCY" --exclude-overlap --out "$RUNS/$1" >/dev/null
    echo "$1: $((SECONDS - t)) s" >&2
}

n_runs=() k_runs=()
for n in $TOP_NS; do
    point "sweep_n$n" "{\"kg\": \"$KG\", \"top_n\": $n, \"k\": $K}"
    n_runs+=(--run "$RUNS/sweep_n$n")
done
for k in $KS; do
    point "sweep_k$k" "{\"kg\": \"$KG\", \"top_n\": $TOP_N, \"k\": $k}"
    k_runs+=(--run "$RUNS/sweep_k$k")
done
"$BIORAG" eval report --out "$RUNS/report_top_n" "${n_runs[@]}"
"$BIORAG" eval report --out "$RUNS/report_k" "${k_runs[@]}"

# One table per sweep (the merged reports label every column MedMCQA; the run names say which).
"$PY" - "$RUNS" "$TOP_NS" "$KS" "$K" "$TOP_N" <<'EOF' | tee "$RUNS/sweeps.md"
import json, sys
from pathlib import Path

runs, top_ns, ks, k, top_n = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), *sys.argv[4:]


def row(name):
    m = json.loads((Path(runs) / name / "metrics.json").read_text())
    e = m["methods"]["vectorgraphrag"]
    cfg = json.loads((Path(runs) / name / "run.json").read_text()).get("models", {})
    llm = f"{cfg.get('llm_backend', '?')}:{cfg.get('llm_model') or '-'}"
    return e.get("accuracy"), e.get("n", m.get("n_items")), e.get("seconds_per_question"), llm


for title, var, values, fixed in (
    ("top_n", "n", top_ns, f"k={k}"),
    ("k", "k", ks, f"top_n={top_n}"),
):
    print(f"\nVectorGraphRAG on MedMCQA dev: accuracy against {title} ({fixed})\n")
    print(f"| {title} | accuracy | questions | s/question | LLM |")
    print("|---|---|---|---|---|")
    for v in values:
        acc, n, sec, llm = row(f"sweep_{var}{v}")
        acc_s = "–" if acc is None else f"{acc:.3f}"
        sec_s = "–" if sec is None else f"{sec:.2f}"
        print(f"| {v} | {acc_s} | {n} | {sec_s} | {llm} |")
EOF
echo "reports: $RUNS/report_top_n/report.md $RUNS/report_k/report.md; table: $RUNS/sweeps.md" >&2
