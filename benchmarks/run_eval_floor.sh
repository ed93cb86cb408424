#!/usr/bin/env bash
# The evaluation harness's offline runs (issue: evaluation): every method with the no-LLM
# operators (the floor), then the dry-run model for calls and tokens per question.
# Needs ../shared/data and the indexes built by bench_retrieval_quality.py (benchmarks/.cache).
set -euo pipefail
cd "$(dirname "$0")/.."
export BIORAG_PROGRESS=0 BIORAG_HOME=benchmarks/.cache/home
D=../shared/data
OUT=benchmarks/results
M=closed-book,retrieve-read,rewrite,hyde,raptor,claim,claims
# Scored with each benchmark's own evaluator, said explicitly; metrics.json records the scoring,
# the commit and the command (and accounting.wall_s, the run's wall time).
run() { local t=$SECONDS; .venv/bin/biorag eval "$@" --scoring official; echo "wall: $((SECONDS - t)) s"; }

run --dataset pubmedqa --data $D/pubmedqa/ori_pqal.json --split test \
    --setting reasoning-required --methods $M --out $OUT/eval_pubmedqa_reasoning_floor
run --dataset pubmedqa --data $D/pubmedqa/ori_pqal.json --split test --setting open \
    --index benchmarks/.cache/index/pubmedqa --methods $M --out $OUT/eval_pubmedqa_open_floor
run --dataset bioasq --data $D/mirage/rawdata/bioasq/Task11BGoldenEnriched --split yesno \
    --index benchmarks/.cache/index/bioasq --methods $M --out $OUT/eval_bioasq11b_yesno_floor
# Calls and tokens per question with the dry-run model (answers carry no knowledge).
BIORAG_LLM_BACKEND=mock BIORAG_LLM_MOCK_SCRIPT=dry-run BIORAG_LLM_CACHE=false \
run --dataset pubmedqa --data $D/pubmedqa/ori_pqal.json --split test --setting open \
    --index benchmarks/.cache/index/pubmedqa --methods $M --limit 50 \
    --out $OUT/eval_pubmedqa_open_dryrun
BIORAG_LLM_BACKEND=mock BIORAG_LLM_MOCK_SCRIPT=dry-run BIORAG_LLM_CACHE=false \
run --dataset pubmedqa --data $D/pubmedqa/ori_pqal.json --split test --setting open \
    --index benchmarks/.cache/index/pubmedqa --methods claims --limit 50 \
    --method-options '{"claims": {"mode": "faithful"}}' \
    --out $OUT/eval_pubmedqa_open_dryrun_faithful
# The per-question rows the figures rest on (predictions.jsonl stays out of the repository).
.venv/bin/python benchmarks/question_rows.py $OUT/eval_pubmedqa_reasoning_floor \
    $OUT/eval_pubmedqa_open_floor $OUT/eval_bioasq11b_yesno_floor \
    $OUT/eval_pubmedqa_open_dryrun $OUT/eval_pubmedqa_open_dryrun_faithful
