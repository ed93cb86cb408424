"""One typed settings model, read from ``biorag.toml`` (or ``--config``) and ``BIORAG_*`` variables.

Precedence, lowest first: defaults, the TOML file, environment variables. An environment variable
``BIORAG_<SECTION>_<KEY>`` sets ``[section] key`` (``BIORAG_LLM_BASE_URL`` sets ``llm.base_url``).
Secrets never live here: a backend names the environment variable that holds its key.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from biorag.errors import ConfigError
from biorag.util.secrets import REDACTED, looks_secret, mask_url

DEFAULT_CONFIG_FILE = "biorag.toml"
ENV_PREFIX = "BIORAG_"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LLMSettings(_Section):
    """Which language model answers, and how it is called.

    ``backend = "none"`` selects the no-LLM operators everywhere (the default that runs anywhere).
    """

    backend: Literal["none", "openai", "hf", "mock"] = "none"
    base_url: str | list[str] | None = Field(
        default=None,
        description="the API root (usually ending in /v1); a list, or a comma-separated string, "
        "spreads requests over several servers of the same model with failover",
    )
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    hf_path: str | None = None
    load_in_4bit: Literal["auto", "yes", "no"] = "auto"
    mock_script: str | None = Field(
        default=None, description="JSON/JSONL file of scripted responses for the mock backend"
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    timeout_s: float = Field(
        default=60.0, gt=0, description="read timeout, plus timeout_per_token_s per max token"
    )
    timeout_per_token_s: float = Field(
        default=0.2,
        ge=0,
        description="seconds per requested token (0.2: a server slower than 5 tokens/s times out)",
    )
    budget_scale: float = Field(
        default=1.0,
        gt=0,
        description="multiplies every operator's output budget (max_tokens sized to the answer "
        "it expects); raise it for a reasoning model that thinks before it answers",
    )
    connect_timeout_s: float = Field(default=5.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    concurrency: int = Field(default=8, ge=1)
    endpoint_concurrency: int = Field(
        default=4, ge=1, description="requests in flight per server when base_url lists several"
    )
    structured_output: Literal[
        "auto", "native", "json_schema", "json_object_schema", "json_object", "none"
    ] = Field(
        default="auto",
        description="auto: the server's own constrained decoding, then json_schema, "
        "json_object with the schema, json_object, the schema in the prompt only",
    )
    stop_loops: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="stream answers and close the stream when the model starts looping, so "
        "the server stops generating: auto on llama.cpp and vLLM (they stop when the stream "
        "closes and count tokens as they go) and in process (backend hf); on: every server "
        "(counts of a stream closed early are then estimated where the server gives none); "
        "the loop is cut afterwards either way",
    )
    context_window: int | None = Field(
        default=None,
        ge=128,
        description="tokens a request may use; default: what the server reports (llama.cpp, "
        "vLLM), else prompts are not fitted",
    )
    cache: bool = True
    cache_path: str | None = Field(default=None, description="default: <home>/llm_cache.sqlite")

    def base_urls(self) -> list[str]:
        """``base_url`` as a list (a comma-separated string is split)."""
        raw = self.base_url or []
        items = raw.split(",") if isinstance(raw, str) else raw
        return [u.strip() for u in items if u and u.strip()]

    @model_validator(mode="after")
    def _needs(self) -> LLMSettings:
        for url in self.base_urls():
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"base_url {url!r} must start with http:// or https://")
        if self.backend == "openai" and not (self.base_urls() and self.model):
            raise ValueError("backend 'openai' needs base_url and model")
        if self.backend == "hf" and not self.hf_path:
            raise ValueError(
                "backend 'hf' needs hf_path (a local transformers model directory or .gguf file)"
            )
        return self


class EmbedSettings(_Section):
    backend: Literal["sentence-transformers", "openai"] = "sentence-transformers"
    model: str = Field(
        default="all-MiniLM-L6-v2",
        description="a path, a model name, or all-MiniLM-L6-v2 (loaded offline from its package)",
    )
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    batch_size: int = Field(default=64, ge=1)
    device: str = "cpu"
    precision: Literal["float32", "float16"] = Field(
        default="float32",
        description="float16: float16 autocast for large inputs on a CUDA device (about 4x faster "
        "forward passes); ignored on the CPU",
    )
    long_texts: Literal["truncate", "pool"] = Field(
        default="truncate",
        description="a text longer than the local model reads (256 word pieces for MiniLM): "
        "truncate = the model's own cut (its start); pool = the mean of its windows' vectors "
        "(measured worse on whole PubMedQA abstracts: docs/benchmarks.md); to embed chunks "
        "whole, chunk at the window (chunking.chunk_tokens = 250)",
    )
    cache: bool = True


class RerankSettings(_Section):
    backend: Literal["bi-encoder", "cross-encoder", "llm"] = "bi-encoder"
    model: str | None = Field(default=None, description="cross-encoder path or name")


class CorpusSettings(_Section):
    max_record_chars: int = Field(
        default=5_000_000,
        ge=1,
        description="records with more characters (title + text) are refused, named by id",
    )


class ChunkingSettings(_Section):
    method: Literal["sentence", "semantic"] = "sentence"
    chunk_tokens: int = Field(default=1000, ge=16)
    overlap_tokens: int = Field(default=200, ge=0)
    max_chunk_tokens: int = Field(default=1024, ge=16)
    semantic_percentile: float = Field(default=95.0, gt=0, lt=100)

    @model_validator(mode="after")
    def _overlap(self) -> ChunkingSettings:
        if self.overlap_tokens >= self.chunk_tokens:
            raise ValueError("overlap_tokens must be smaller than chunk_tokens")
        return self


class RetrievalSettings(_Section):
    """Defaults measured in benchmarks/bench_retrieval_quality.py (docs/benchmarks.md)."""

    retriever: Literal["bm25", "dense", "hybrid"] = "hybrid"
    k: int = Field(default=10, ge=1)
    fusion: Literal["score", "rrf"] = Field(
        default="score", description="hybrid fusion: min-max score combination, or RRF"
    )
    dense_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    rrf_k: int = Field(default=60, ge=1)
    bm25_k1: float = Field(default=0.9, gt=0)
    bm25_b: float = Field(default=0.5, ge=0, le=1)
    per_corpus_k: int = Field(default=3, ge=1)
    corpus_retrievers: dict[str, Literal["bm25", "dense", "hybrid"]] = Field(
        default_factory=dict,
        description="a retriever per index name, replacing `retriever` for that index (CLAIMS "
        'searches each corpus its own way, MedRAG-style: {"wikipedia": "bm25", "textbooks": '
        '"hybrid", "statpearls": "hybrid", "pubmed": "dense"}); in the environment as JSON or '
        "name=retriever,name=retriever",
    )
    dense_index: Literal["auto", "flat", "hnsw", "ivf"] = "auto"
    hnsw_min_size: int = Field(default=200_000, ge=1)
    doc_score: Literal["max", "sum", "top2"] = Field(
        default="max",
        description="a document's score at document level: its best chunk's (max), or the sum "
        "of its chunks' (sum) or of its two best (top2) fused scores",
    )
    prf: Literal["none", "rm3"] = Field(
        default="none", description="pseudo-relevance feedback on BM25: none, or RM3"
    )
    prf_docs: int = Field(default=10, ge=1, description="RM3: feedback chunks")
    prf_terms: int = Field(default=10, ge=1, description="RM3: expansion terms")
    prf_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="RM3: the original query's weight"
    )
    abbreviations: str = Field(
        default="off",
        description="abbreviation expansion of queries: off; corpus = Schwartz-Hearst pairs "
        'mined from the index; or a pairs file (JSON {"CRP": "C-reactive protein"} or '
        "short<TAB>long lines)",
    )
    abbreviations_for: Literal["bm25", "all"] = Field(
        default="bm25", description="which retrievers see the expanded query"
    )
    second_encoder: str | None = Field(
        default=None,
        description="a second dense encoder fused with the index's own (all-mpnet-base-v2, or "
        "a local sentence-transformers directory); its vectors are built beside the index on "
        "first use",
    )
    second_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="the second encoder's weight in the fusion"
    )

    @field_validator("corpus_retrievers", mode="before")
    @classmethod
    def _mapping_from_text(cls, value: Any) -> Any:
        """``{"a": "bm25"}`` as JSON text or ``a=bm25,b=dense`` (an environment variable)."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if text.startswith("{"):
            return json.loads(text)
        pairs = [p.split("=", 1) for p in text.split(",") if p.strip()]
        if any(len(p) != 2 for p in pairs):
            raise ValueError("expected JSON or name=retriever,name=retriever")
        return {k.strip(): v.strip() for k, v in pairs}


class IndexSettings(_Section):
    """Where an index's search structures live: on disk beside its corpus (``local``, the
    default), or in a Milvus server (``milvus``: dense HNSW and Milvus's own BM25 in one
    collection, searched and fused in the server). Chosen when an index is built; the manifest
    remembers it."""

    backend: Literal["local", "milvus"] = "local"
    milvus_uri: str | None = Field(
        default=None,
        description="the Milvus server, e.g. http://127.0.0.1:19530 (standalone, a cluster, or "
        "milvus-lite in server mode); needed by backend milvus",
    )
    milvus_fusion: Literal["client", "server"] = Field(
        default="client",
        description="hybrid search: client = Milvus's BM25 and dense lists fused by biorag "
        "(retrieval.fusion, as the local backend); server = fused in Milvus (RRFRanker, or "
        "WeightedRanker with Milvus's arctan score normalization)",
    )
    milvus_token_env: str | None = Field(
        default=None,
        description="name of the environment variable holding the Milvus token (never the "
        "token itself)",
    )

    @model_validator(mode="after")
    def _needs_uri(self) -> IndexSettings:
        if self.milvus_uri is not None and not self.milvus_uri.startswith(("http://", "https://")):
            raise ValueError(f"milvus_uri {self.milvus_uri!r} must start with http:// or https://")
        return self


class ExecutorSettings(_Section):
    """Where embarrassingly parallel batch work runs (embedding an index's chunks, kg and
    strata extraction, eval answering): in this process (``local``, the default) or on a Ray
    cluster (``ray``: Ray Data ``map_batches`` over an actor pool; the ``ray`` extra)."""

    kind: Literal["local", "ray"] = "local"
    ray_address: str | None = Field(
        default=None,
        description="the Ray cluster, e.g. 127.0.0.1:6379 (ray start --head); unset: a local "
        "Ray started in this process",
    )
    ray_workers: int | None = Field(
        default=None, ge=1, description="actors (one CPU each); unset: one per cluster CPU"
    )
    batch_size: int = Field(default=256, ge=1, description="items per batch sent to a worker")


class AnswerSettings(_Section):
    extraction: Literal["json", "regex"] = Field(
        default="json",
        description="how the option letter is read from a model's answer: a second call that "
        'returns {"answer": ...} (CLAIMS) or regular expressions (VectorGraphRAG)',
    )
    prompt: Literal["biorag", "mirage"] = Field(
        default="biorag",
        description="the multiple-choice reader: biorag's (reason, then the letter; two calls) "
        'or MIRAGE\'s (one call for {"step_by_step_thinking", "answer_choice"}, read by '
        "MIRAGE's locate_answer) for runs that stand next to MIRAGE's tables",
    )
    verify: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="check every answer sentence against the passages it cites: auto (the LLM "
        "verifier when its cost is under verify_max_share of the answer's tokens, else the "
        "rules one), on (the named verifier at any cost), off",
    )
    verifier: Literal["auto", "rules", "llm"] = Field(
        default="auto",
        description="rules: claim alignment without an LLM (a floor); llm: the model's "
        "verdicts; auto: the model when there is one and verify allows its cost",
    )
    verify_max_share: float = Field(
        default=0.2,
        ge=0.0,
        description="verify = auto: the LLM check's largest share of the answer's own tokens",
    )
    verify_supported: float = Field(
        default=0.82,
        ge=0.0,
        le=1.0,
        description="rules verifier: the support score a span "
        "needs for 'supported' (chosen on BioASQ 7b-10b: benchmarks/bench_verify.py)",
    )
    verify_partial: float = Field(
        default=0.40,
        ge=0.0,
        le=1.0,
        description="rules verifier: the score for 'partly supported'",
    )
    verify_contradicted: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="rules verifier: the least score of a span "
        "whose negation, numbers or direction disagree for 'contradicted'",
    )


class JudgeSettings(_Section):
    """The five-point answer judge of ``biorag eval`` (BioCDQA's GPT-4 evaluation).

    ``mode``: ``auto`` judges when the run has questions with an ideal answer and a judge model
    is configured; ``on`` requires a judge model (an error otherwise); ``off`` never judges.
    Every other key overrides the ``[llm]`` key of the same name for the judge only; unset keys
    inherit from ``[llm]``, so the judge can be another endpoint or model than the answering
    one (``BIORAG_JUDGE_MODEL=gpt-4o``). A ``base_url`` without a ``backend`` selects
    ``openai``, an ``hf_path`` without one selects ``hf``.
    """

    mode: Literal["auto", "on", "off"] = "auto"
    backend: Literal["none", "openai", "hf", "mock"] | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    hf_path: str | None = None
    load_in_4bit: Literal["auto", "yes", "no"] | None = None
    mock_script: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout_s: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0)
    concurrency: int | None = Field(default=None, ge=1)
    structured_output: Literal["auto", "json_schema", "json_object", "none"] | None = None
    cache: bool | None = None
    cache_path: str | None = None

    def overrides(self) -> dict[str, Any]:
        """The ``[llm]`` keys this section sets (every key but ``mode`` that is not None)."""
        return {k: v for k, v in self.model_dump(exclude={"mode"}).items() if v is not None}


class Settings(_Section):
    home: str = Field(default=".biorag", description="caches and the demo index live here")
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embed: EmbedSettings = Field(default_factory=EmbedSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    corpus: CorpusSettings = Field(default_factory=CorpusSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    executor: ExecutorSettings = Field(default_factory=ExecutorSettings)
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser()

    def llm_cache_path(self) -> Path:
        return (
            Path(self.llm.cache_path)
            if self.llm.cache_path
            else self.home_path / "llm_cache.sqlite"
        )

    def embed_cache_dir(self) -> Path:
        return self.home_path / "embed_cache"

    def judge_llm(self) -> LLMSettings:
        """The judge's full LLM settings: ``[llm]`` with every key set in ``[judge]`` replacing it.

        ``backend = "none"`` in the result means no judge model is configured. An invalid
        combination raises :class:`ConfigError` naming the ``judge.*`` keys to set.
        """
        over = self.judge.overrides()
        if "backend" not in over:
            if "base_url" in over:
                over["backend"] = "openai"
            elif "hf_path" in over:
                over["backend"] = "hf"
        data = {**self.llm.model_dump(), **over}
        try:
            return LLMSettings.model_validate(data)
        except ValidationError as e:
            why = "; ".join(str(err["msg"]).removeprefix("Value error, ") for err in e.errors())
            raise ConfigError(
                f"invalid judge model settings ({why}): set the judge.* keys "
                "(e.g. BIORAG_JUDGE_BASE_URL and BIORAG_JUDGE_MODEL), or the [llm] keys the "
                "judge inherits"
            ) from None


_SECTIONS = (
    "llm",
    "embed",
    "rerank",
    "corpus",
    "chunking",
    "retrieval",
    "index",
    "executor",
    "answer",
    "judge",
)


def _env_overrides(environ: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX) :].lower()
        if rest == "home":
            out["home"] = value
            continue
        for section in _SECTIONS:
            if rest.startswith(section + "_"):
                out.setdefault(section, {})[rest[len(section) + 1 :]] = value
                break
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(merged.get(k), dict):
            merged[k] = _merge(merged[k], v)
        else:
            merged[k] = v
    return merged


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed where ``loc`` points (a section's fields, or the top level's)."""
    model: Any = Settings
    for part in loc[:-1]:
        field = getattr(model, "model_fields", {}).get(part)
        model = field.annotation if field is not None else None
        if model is None:
            return []
    return sorted(getattr(model, "model_fields", {}))


def _nearest(key: str, known: list[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return close[0] if close else None


def _without_value(msg: str, value: Any) -> str:
    """``msg`` with the offending value taken out, should a validator have quoted it."""
    if isinstance(value, str) and len(value) >= 4:
        for shown in (repr(value), value):
            msg = msg.replace(shown, "<value not shown>")
    return msg


def _describe(err: ValidationError, origin: str) -> str:
    """One line per invalid setting, naming the key and what is wrong with it. No value is
    ever printed: a mistyped key may hold a secret (``api_kee = "<the key>"``), so an unknown
    key is named with the nearest known one instead."""
    lines = [f"invalid settings ({origin}):"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if looks_secret(key):  # never echoed: biorag reads keys from the environment only
            lines.append(
                f"  {key}: biorag takes no secret from settings (value not shown); put the key "
                "in the environment variable named by llm.api_key_env (default OPENAI_API_KEY)"
            )
            continue
        if e["type"] == "extra_forbidden":
            near = _nearest(str(e["loc"][-1]), _known_keys(tuple(e["loc"])))
            hint = f"; did you mean {'.'.join([*map(str, e['loc'][:-1]), near])}?" if near else ""
            lines.append(f"  {key}: unknown key (value not shown){hint}")
            continue
        lines.append(f"  {key}: {_without_value(str(e['msg']), e.get('input'))} (value not shown)")
    lines.append("Fix the key or value, or run `biorag config show` to see the allowed settings.")
    return "\n".join(lines)


def load_settings(
    path: str | Path | None = None, environ: dict[str, str] | None = None
) -> Settings:
    """Read the settings: defaults < TOML file < ``BIORAG_*`` environment variables.

    ``path=None`` reads ``./biorag.toml`` when it exists. A missing explicit path, a TOML syntax
    error or an invalid key/value raises :class:`ConfigError` naming the key.
    """
    environ = dict(os.environ if environ is None else environ)
    data: dict[str, Any] = {}
    origin = "defaults"
    if path is None and environ.get("BIORAG_CONFIG"):
        path = environ["BIORAG_CONFIG"]
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist; pass an existing TOML file")
    else:
        p = Path(DEFAULT_CONFIG_FILE)
    if p.is_file():
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config file {p} is not valid TOML: {e}") from e
        origin = str(p)
    env = _env_overrides({k: v for k, v in environ.items() if k != "BIORAG_CONFIG"})
    if env:
        # An endpoint given only through the environment selects the openai backend.
        llm_env = env.get("llm", {})
        file_backend = data.get("llm", {}).get("backend")
        if (
            "base_url" in llm_env
            and "model" in llm_env
            and "backend" not in llm_env
            and file_backend in (None, "none")
        ):
            llm_env["backend"] = "openai"
        data = _merge(data, env)
        origin += " + environment"
    try:
        return Settings.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_describe(e, origin)) from None


def masked_dict(settings: Settings) -> dict[str, Any]:
    """The effective settings as a dict with anything secret-looking masked."""

    def walk(obj: Any, key: str = "") -> Any:
        if isinstance(obj, dict):
            return {k: walk(v, k) for k, v in obj.items()}
        if isinstance(obj, list | tuple):  # e.g. several base_url endpoints
            return [walk(v, key) for v in obj]
        if isinstance(obj, str):
            lowered = key.lower()
            if looks_secret(lowered) and not lowered.endswith("_env"):
                return REDACTED
            if "url" in lowered:
                return mask_url(obj)
        return obj

    return walk(settings.model_dump())
