"""What an OpenAI-compatible endpoint is and what it can do, found by asking it.

:func:`probe` reads llama.cpp's ``/props`` (context window per slot, chat template, slots),
``/v1/models`` (vLLM's ``max_model_len``, llama.cpp's ``meta``, the served model ids),
Ollama's ``/api/version`` and ``/api/show`` and llama-cpp-python's token counter
(``/extras/tokenize/count``, which also counts prompts for context fitting; that server reports
no window).

Ollama never refuses an over-long prompt: its OpenAI endpoint cuts it silently to the model's
``num_ctx``, so a window cannot be learned from an error. It is read from the model's parameters
(``/api/show``); where they set none, the server's default applies, which no endpoint reports,
and prompts are fitted to :data:`OLLAMA_DEFAULT_WINDOW`, the smallest default Ollama has
shipped, with a warning naming ``llm.context_window``.
:class:`ServerRegistry` remembers, per base URL and model, the kind and the structured-output
form that worked, in ``<home>/llm_servers.json``, so the next process starts with the right
form instead of rediscovering a refusal.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from biorag.util.files import write_text_atomic
from biorag.util.openai_http import api_root
from biorag.util.secrets import mask_url

log = logging.getLogger("biorag.llm")

LLAMA_CPP_PYTHON_COUNT = "/extras/tokenize/count"
#: the window Ollama's OpenAI endpoint is assumed to cut prompts to when the model's parameters
#: set no ``num_ctx``: its smallest default (2,048; later versions 4,096), never too long
OLLAMA_DEFAULT_WINDOW = 2048


@dataclass
class ServerInfo:
    """What one endpoint told us. ``n_ctx`` is the context window one request may use (per slot
    on llama.cpp), None when the server does not say."""

    kind: str = "unknown"  # llama.cpp | llama-cpp-python | vllm | ollama | openai | unknown
    n_ctx: int | None = None
    models: list[str] = field(default_factory=list)
    has_tokenize: bool = False
    has_chat_template: bool | None = None
    slots: int | None = None
    reached: bool = False
    #: ``n_ctx`` is an assumption, not the server's word (Ollama without a model ``num_ctx``)
    n_ctx_assumed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def _get_json(client: httpx.AsyncClient, url: str, info: ServerInfo) -> Any | None:
    try:
        r = await client.get(url)
    except httpx.HTTPError:
        return None
    info.reached = True
    if r.status_code != 200:
        return None
    try:
        return r.json()
    except ValueError:
        return None


async def _llama_cpp_python_counts(client: httpx.AsyncClient, root: str) -> bool:
    """Whether the server answers llama-cpp-python's ``/extras/tokenize/count``."""
    try:
        r = await client.post(root + LLAMA_CPP_PYTHON_COUNT, json={"input": "probe"})
        return r.status_code == 200 and isinstance(r.json().get("count"), int)
    except (httpx.HTTPError, ValueError, AttributeError):
        return False


async def _ollama_num_ctx(client: httpx.AsyncClient, root: str, model: str) -> int | None:
    """The ``num_ctx`` of ``model``'s parameters on Ollama (``/api/show``), if they set one."""
    try:
        r = await client.post(root + "/api/show", json={"model": model})
        data = r.json() if r.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return None
    params = data.get("parameters") if isinstance(data, dict) else None
    m = re.search(r"^\s*num_ctx\s+(\d+)", params, re.M) if isinstance(params, str) else None
    return int(m.group(1)) if m else None


async def probe(client: httpx.AsyncClient, base_url: str, model: str | None = None) -> ServerInfo:
    """Ask the endpoint what it is; never raises (an endpoint that answers nothing useful is
    ``unknown`` with no window). ``model``: the model to be asked, where the window is the
    model's (Ollama)."""
    info = ServerInfo()
    root = api_root(base_url)
    props = await _get_json(client, root + "/props", info)
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        info.kind = "llama.cpp"
        info.has_tokenize = True
        gen = props["default_generation_settings"]
        n_ctx = gen.get("n_ctx") or props.get("n_ctx")
        info.n_ctx = int(n_ctx) if isinstance(n_ctx, int | float) and n_ctx > 0 else None
        template = props.get("chat_template")
        info.has_chat_template = bool(template) if template is not None else None
        slots = props.get("total_slots")
        info.slots = int(slots) if isinstance(slots, int) else None
    models = await _get_json(client, base_url.rstrip("/") + "/models", info)
    if isinstance(models, dict) and isinstance(models.get("data"), list):
        for m in models["data"]:
            if not isinstance(m, dict):
                continue
            if m.get("id"):
                info.models.append(str(m["id"]))
            owner = str(m.get("owned_by") or "").lower()
            if info.kind == "unknown" and (owner == "vllm" or "max_model_len" in m):
                info.kind = "vllm"
            if info.kind == "vllm" and info.n_ctx is None and m.get("max_model_len"):
                info.n_ctx = int(m["max_model_len"])
    if info.kind == "unknown":
        version = await _get_json(client, root + "/api/version", info)
        if isinstance(version, dict) and "version" in version:
            info.kind = "ollama"
            info.n_ctx = await _ollama_num_ctx(client, root, model) if model else None
            if info.n_ctx is None:
                info.n_ctx, info.n_ctx_assumed = OLLAMA_DEFAULT_WINDOW, True
        elif info.models:
            info.kind = "openai"
    if info.kind == "openai" and await _llama_cpp_python_counts(client, root):
        info.kind = "llama-cpp-python"
        info.has_tokenize = True
    log.info(
        "LLM endpoint %s: %s, context window %s, models %s",
        mask_url(base_url),
        info.kind,
        info.n_ctx if info.n_ctx else "not reported",
        ", ".join(info.models[:3]) or "not listed",
    )
    return info


class ServerRegistry:
    """A small JSON file of what worked, keyed by ``base_url|model`` (URL credentials masked).

    Entries: ``kind`` and ``form`` (the structured-output form that worked). Missing or broken
    files read as empty; writes are atomic and best-effort (a read-only home only logs).
    """

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, Any]] | None = None

    @staticmethod
    def key(base_url: str, model: str) -> str:
        return f"{mask_url(base_url.rstrip('/'))}|{model}"

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._data is None:
            self._data = {}
            if self.path is not None and self.path.exists():
                try:
                    data = json.loads(self.path.read_text(encoding="utf-8"))
                    if isinstance(data, dict):
                        self._data = {k: v for k, v in data.items() if isinstance(v, dict)}
                except (OSError, ValueError):
                    log.warning("ignoring unreadable %s", self.path)
        return self._data

    def get(self, base_url: str, model: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._load().get(self.key(base_url, model), {}))

    def update(self, base_url: str, model: str, **values: Any) -> None:
        with self._lock:
            data = self._load()
            entry = data.setdefault(self.key(base_url, model), {})
            if all(entry.get(k) == v for k, v in values.items()):
                return
            entry.update(values, updated=time.time())
            if self.path is None:
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(self.path, json.dumps(data, indent=1, sort_keys=True))
            except OSError as e:
                log.warning("could not remember LLM server details in %s: %s", self.path, e)
