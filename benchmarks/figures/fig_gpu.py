"""docs/benchmarks.md: the runs on a lent GPU (``llm_gpu_rates_h200.json``, ``embed_gpu.json``,
``gpu/``: the H200 test log and the bfloat16 SmolLM2 summary) and SmolLM2 in process on the CPU
(``hf_gguf_t1.json``)."""

from __future__ import annotations

import re
from typing import Any

from figures import RESULTS, FigureError, dig, figure, find_row, num, result, source, table

RATES = "llm_gpu_rates_h200.json"
EMBED = "embed_gpu.json"
PYTEST_LOG = "gpu/pytest_llm_h200.log"
SMOL = "gpu/real_llm_summary_gpu_4bit_no.json"
GGUF = "hf_gguf_t1.json"
DEFAULT_GPU_MODE = "pipelined"  # biorag's encoder on a GPU (embed/st_pipeline.py), in bold


def _rate_row(slots: int) -> dict[str, Any]:
    return find_row(RATES, "rows", slots=slots)


@figure("gpu-8b-rates")
def gpu_8b_rates() -> str:
    """The sentence of an 8B model's rates on the H200."""
    r1, r8, r32, r128 = (_rate_row(n) for n in (1, 8, 32, 128))
    return (
        f"prompt tokens/s {r8['prefill']['wall_prompt_per_s']:,.0f} from 8 sequences at a time; "
        f"generated tokens/s {r1['decode']['wall_predicted_per_s']:.1f} for one sequence, "
        f"{r32['decode']['wall_predicted_per_s']:,.0f} for 32, "
        f"{r128['decode']['wall_predicted_per_s']:,.0f} for 128 "
        f"({r32['decode']['per_sequence_per_s']:.1f} a sequence at 32"
    )


# -- embedding on the H100 ---------------------------------------------------------------------


def _embed_rows() -> list[dict[str, Any]]:
    return dig(result(EMBED), "rows", EMBED)


def _best(mode: str, batch: int | None = None) -> float:
    rows = [r for r in _embed_rows() if r["device"] == "cuda" and r["mode"] == mode]
    rows = [r for r in rows if batch is None or r["batch_size"] == batch]
    if not rows:
        raise FigureError(f"{EMBED} has no CUDA row for {mode} (batch {batch})")
    return max(r["texts_per_s"] for r in rows)


@figure("gpu-embed")
def gpu_embed() -> str:
    data = result(EMBED)
    body = []
    for r in _embed_rows():
        bold = r["device"] == "cuda" and r["mode"] == DEFAULT_GPU_MODE
        device = "CUDA" if r["device"] == "cuda" else f"CPU ({data.get('cpu_threads')} threads)"
        cos = r.get("cos_vs_cpu_min")
        body.append([
            device, f"**{r['mode']}**" if bold else r["mode"], r["batch_size"],
            num(r["texts_per_s"], 0, bold=bold), num(r.get("peak_gpu_mib"), 0),
            "" if cos is None else f"{cos:.6f}",
        ])  # fmt: skip
    header = ["device", "mode", "batch", "texts/s", "peak GPU MiB", "cosine to CPU vectors (min)"]
    return (
        table(header, body, "llrrrr") + f"\n\nResult: `benchmarks/results/{EMBED}`, {data['gpu']}."
    )


@figure("gpu-embed-pipelined-x")
def gpu_embed_pipelined_x() -> str:
    """The best pipelined float32 throughput over the best ``SentenceTransformer.encode``."""
    return f"{_best('pipelined') / _best('st'):.1f}x"


def _fp16_change(batch: int) -> str:
    return f"{100 * (_best('pipelined-fp16', batch) / _best('pipelined', batch) - 1):+.0f}%"


@figure("gpu-embed-fp16-1024")
def gpu_embed_fp16_1024() -> str:
    return _fp16_change(1024)


@figure("gpu-embed-fp16-256")
def gpu_embed_fp16_256() -> str:
    return _fp16_change(256)


# -- SmolLM2 on the H200 -----------------------------------------------------------------------


@figure("gpu-pytest-h200")
def gpu_pytest_h200() -> str:
    """pytest's last summary line in the H200 log: '165 passed, 1 skipped ... in 75 s'."""
    file = RESULTS / PYTEST_LOG
    if not file.is_file():
        raise FigureError(f"result file benchmarks/results/{PYTEST_LOG} is missing")
    lines = re.findall(r"^=*\s*(\d+ passed.*? in ([\d.]+)s)", file.read_text(), re.M)
    if not lines:
        raise FigureError(f"{PYTEST_LOG} has no pytest summary line")
    summary, seconds = lines[-1]
    counts = ", ".join(
        p for p in summary.split(" in ")[0].split(", ") if "passed" in p or "skipped" in p
    )
    return f"{counts}, in {float(seconds):.0f} s"


def _smol_methods() -> dict[str, Any]:
    runs = dig(result(SMOL), "runs", SMOL)
    return next(iter(runs.values()))["methods"]


@figure("gpu-smollm2")
def gpu_smollm2() -> str:
    data = result(SMOL)
    weights = f'load_in_4bit = "{dig(data, "backend/load_in_4bit", SMOL)}" (bfloat16)'
    body = []
    for m, e in _smol_methods().items():
        body.append([
            weights, m, e["n"], e["answered"], e["unparseable"], num(e["calls_per_q"], 0),
            num(e["tokens_per_q"], 0), num(e["p50_s"], 2), num(e["scores"]["accuracy"], 2),
        ])  # fmt: skip
    header = ["weights", "method", "questions", "answered", "unparseable", "calls / q",
              "tokens / q", "p50 s / q", "accuracy"]  # fmt: skip
    scoring = {e["scores"].get("scoring") for e in _smol_methods().values()}
    how = f", {scoring.pop()} scoring" if len(scoring) == 1 else ""
    return table(header, body, "llrrrrrrr") + f"\n\nResult: `benchmarks/results/{SMOL}`{how}."


@figure("gpu-smollm2-extract")
def gpu_smollm2_extract() -> str:
    """The ``answer_extract`` calls that failed to parse, of all of them."""
    stages = [e["stages"]["answer_extract"] for e in _smol_methods().values()]
    failed, calls = sum(s["parse_failures"] for s in stages), sum(s["calls"] for s in stages)
    return f"{failed} of {calls}"


# -- SmolLM2 in process on the CPU -------------------------------------------------------------


def _span(values: list[float], digits: int, unit: str) -> str:
    lo, hi = min(values), max(values)
    if f"{lo:.{digits}f}" == f"{hi:.{digits}f}":
        return f"{lo:.{digits}f} {unit}"
    return f"{lo:.{digits}f}-{hi:.{digits}f} {unit}"


@figure("gpu-hf-gguf")
def gpu_hf_gguf() -> str:
    d = result(GGUF)
    gen = d["generation"]
    tokens = {g["completion_tokens"] for g in gen}
    body = [
        ["sha256 of the GGUF (cache key and directory name)", f"{d['sha256_s']:.1f} s"],
        [f"conversion, once (dequantize, save {d['converted_mb']:,} MB float32 + tokenizer)",
         f"{d['convert_s']:.1f} s"],
        ["loading the converted directory (later processes)", f"{d['converted_load_s']:.2f} s"],
        [f"greedy generation, {d['threads']} torch thread{'s' if d['threads'] > 1 else ''}, "
         f"{', '.join(str(t) for t in sorted(tokens))} tokens "
         f"({len(gen)} runs)", _span([g["tokens_per_s"] for g in gen], 1, "tokens/s")],
    ]  # fmt: skip
    return table(["step", "time"], body, "lr") + "\n\n" + source(GGUF)


@figure("gpu-hf-gguf-load")
def gpu_hf_gguf_load() -> str:
    """The load average the run recorded (1, 5 and 15 minutes)."""
    loads = dig(result(GGUF), "load_average", GGUF)
    return " / ".join(f"{x:.1f}" for x in loads) + " (1 / 5 / 15 minutes)"
