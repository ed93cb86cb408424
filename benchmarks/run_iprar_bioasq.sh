#!/usr/bin/env bash
# IP-RAR through the evaluation runner on BioASQ 11b (issue: IP-RAR), every question type:
# document P/R/F1/MAP, yes/no, factoid and list exact answers, with the no-LLM operators; then
# LLM calls per question with the dry-run model, relevance checked one by one vs 5 per call.
# Needs ../shared/data and the BioASQ snippet index built by bench_retrieval_quality.py.
set -euo pipefail
cd "$(dirname "$0")/.."
export BIORAG_PROGRESS=0 BIORAG_HOME=benchmarks/.cache/home
D=../shared/data/mirage/rawdata/bioasq/Task11BGoldenEnriched
I=benchmarks/.cache/index/bioasq
OUT=benchmarks/results
# Scored with each benchmark's own evaluator, said explicitly; metrics.json records the scoring,
# the commit and the command.
run() { local t=$SECONDS; .venv/bin/biorag eval "$@" --scoring official; echo "wall: $((SECONDS - t)) s"; }

run --dataset bioasq --data $D --index $I --methods iprar,retrieve-read --judge off \
    --out $OUT/eval_bioasq11b_iprar_floor
BIORAG_LLM_BACKEND=mock BIORAG_LLM_MOCK_SCRIPT=dry-run BIORAG_LLM_CACHE=false \
run --dataset bioasq --data $D --index $I --methods iprar --limit 50 --judge off \
    --out $OUT/eval_bioasq11b_iprar_dryrun
BIORAG_LLM_BACKEND=mock BIORAG_LLM_MOCK_SCRIPT=dry-run BIORAG_LLM_CACHE=false \
run --dataset bioasq --data $D --index $I --methods iprar --limit 50 --judge off \
    --method-options '{"iprar": {"relevance_batch": 5}}' \
    --out $OUT/eval_bioasq11b_iprar_dryrun_batch5
# The per-question rows the figures rest on (predictions.jsonl stays out of the repository).
.venv/bin/python benchmarks/question_rows.py $OUT/eval_bioasq11b_iprar_floor \
    $OUT/eval_bioasq11b_iprar_dryrun $OUT/eval_bioasq11b_iprar_dryrun_batch5
