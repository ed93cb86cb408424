"""``run.json``: the configuration an evaluation run records, and the check on resume.

:func:`run_config` builds the record; the keys in :data:`COMPARED_KEYS` (dataset, split,
setting, methods and their options, indexes, models) must match when a run directory is
resumed, the rest is recorded for information. :func:`check_or_write_run_config` refuses a
resume whose configuration differs (naming each difference, :func:`config_differences`) and
otherwise (re)writes ``run.json``, keeping its ``started_at``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biorag import __version__
from biorag.config import RerankSettings, RetrievalSettings, Settings, masked_dict
from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.run.records import RUN_FILE, read_json
from biorag.eval.run.source_docs import policy_effect
from biorag.retrieve.index import read_manifest
from biorag.util.files import write_json_atomic
from biorag.util.secrets import mask_url

log = logging.getLogger("biorag.eval")

# run.json keys a resumed run must match (the rest is recorded for information).
COMPARED_KEYS = (
    "dataset",
    "split",
    "setting",
    "methods",
    "method_options",
    "effective_options",
    "indexes",
    "models",
    "mask_entities",
    "source_docs",
)
# Compared only when run.json has them (runs recorded before they existed still resume).
_NEWER_KEYS = ("effective_options", "mask_entities")


def _recorded_value(old: dict[str, Any], key: str, items: Sequence[QAItem] | None) -> Any:
    """``old[key]``, or what a run recorded before ``key`` existed did: it left no source
    document out (``allow``) where it searched an index. With ``items`` (the run's questions)
    a source-docs policy reads as what it does to them (:func:`.source_docs.policy_effect`):
    ``allow`` and ``exclude`` alike change nothing where no question has its own source
    document."""
    if key == "source_docs":
        value = old[key] if key in old else ("allow" if old.get("indexes") else None)
        return value if items is None else policy_effect(value, items)
    return old.get(key)


def run_config(
    settings: Settings,
    dataset: str,
    data_path: str | Path,
    *,
    split: str | None,
    setting: str | None,
    index_paths: list[Path],
    methods: list[str],
    method_options: dict[str, dict[str, Any]],
    llm_model: str | None = None,
    effective_options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What ``run.json`` records: the keys in ``COMPARED_KEYS`` must match on resume.

    ``effective_options``: each method's options with its defaults filled in, so a resume
    after a default changed (a new biorag version) is refused instead of mixing answers.
    """
    indexes = []
    for p in index_paths:
        m = read_manifest(Path(p))
        indexes.append(
            {"name": m.get("name"), "embed_model": m.get("embed_model"), "dim": m.get("dim")}
        )
    shown = masked_dict(settings)
    llm = settings.llm
    return {
        "dataset": dataset,
        "split": split,
        "setting": setting,
        "methods": list(methods),
        "method_options": _recorded({m: dict(method_options.get(m) or {}) for m in methods}),
        "effective_options": _recorded(effective_options or {}),
        "indexes": indexes,
        "models": {
            "llm_backend": llm.backend,
            "llm_model": llm_model or llm.model,
            "temperature": llm.temperature,
            "max_tokens": llm.max_tokens,
            "embed_model": settings.embed.model,
            "rerank": settings.rerank.model_dump(),
            "retrieval": settings.retrieval.model_dump(),
        },
        # recorded, not compared
        "data_path": str(data_path),
        "index_paths": [str(p) for p in index_paths],
        "llm_base_url": shown["llm"].get("base_url"),
        "biorag_version": __version__,
    }


def _recorded(options: dict[str, Any]) -> Any:
    """``options`` as ``run.json`` holds them: through JSON (tuples become lists, so a resume
    compares like with like) and with any user:password in a ``*url`` value masked (e.g. the
    ``base_url`` of IP-RAR's ``reasoning_model``)."""
    import json

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: mask_url(v) if str(k).lower().endswith("url") and isinstance(v, str) else walk(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(json.loads(json.dumps(options, default=str)))


def _setting_defaults() -> dict[str, Any]:
    """The defaults of the settings ``run.json`` records under ``models``."""
    return {"rerank": RerankSettings().model_dump(), "retrieval": RetrievalSettings().model_dump()}


def _same(old: Any, new: Any, defaults: Any) -> bool:
    """``old == new``, except that a setting added to biorag after the run was recorded (absent
    from ``old``) counts as the same when it holds its default: a new version must not refuse
    to resume a run whose behaviour it does not change."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return bool(old == new)
    defaults = defaults if isinstance(defaults, dict) else {}
    for k in set(old) | set(new):
        if k not in old and k in defaults and new[k] == defaults[k]:
            continue
        if not _same(old.get(k), new.get(k), defaults.get(k)):
            return False
    return True


def config_differences(
    old: dict[str, Any], new: dict[str, Any], items: Sequence[QAItem] | None = None
) -> list[str]:
    """One line per compared key whose value differs; ``items``: the run's questions, which
    tell which source-docs policies do the same (:func:`_recorded_value`)."""
    out = []
    for key in COMPARED_KEYS:
        if key in _NEWER_KEYS and key not in old:
            continue
        a, b = _recorded_value(old, key, items), new.get(key)
        if key == "source_docs" and items is not None:
            b = policy_effect(b, items)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            defaults = _setting_defaults() if key == "models" else {}
            for sub in sorted(set(a) | set(b)):
                if not _same(a.get(sub), b.get(sub), defaults.get(sub)):
                    out.append(f"{key}.{sub}: {a.get(sub)!r} in run.json, now {b.get(sub)!r}")
        else:
            out.append(f"{key}: {a!r} in run.json, now {b!r}")
    return out


def check_or_write_run_config(
    out_dir: Path,
    config: dict[str, Any],
    extra: dict[str, Any],
    items: Sequence[QAItem] | None = None,
) -> None:
    """Refuse a resume with other compared keys; else write ``run.json`` (config + extra).
    ``items``: the run's questions (:func:`config_differences`)."""
    path = out_dir / RUN_FILE
    if path.is_file():
        old = read_json(path)
        diffs = config_differences(old, config, items)
        if diffs:
            raise BioragError(
                f"{out_dir} holds a run with a different configuration ("
                + "; ".join(diffs)
                + "); use a new run directory, or rerun with the recorded settings to resume",
                param="out",
            )
        for key in ("data_path", "biorag_version"):
            if old.get(key) != config.get(key):
                log.warning(
                    "resuming %s: %s was %r, now %r", out_dir, key, old.get(key), config.get(key)
                )
        started = old.get("started_at")
    else:
        started = None
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_json_atomic(path, {**config, **extra, "started_at": started or now, "updated_at": now})
