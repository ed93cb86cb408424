"""Evaluation runs of ``biorag serve``: start one over a dataset of the server's datasets
directory, follow it, read its metrics, report and answers, compare two.

Runs live in ``<data dir>/runs/<name>/`` (the run directory of ``biorag eval``, plus
``serve_run.json``: what the server was asked and how far it got). A run's name is a plain
name (letters, digits, ``._-``) and its data a path inside ``--datasets DIR``: nothing a request
names leaves those directories. Runs are answered one at a time in a background thread that
shares the server's embedder; a stopping server does not wait for a run (its answers are
appended and synced one by one), and the next server starts it again: it resumes from the
answers on disk.

- ``GET /v1/runs``, ``POST /v1/runs`` (202), ``GET /v1/runs/{name}`` (status, metrics, report),
  ``GET /v1/runs/{name}/answers?method=&offset=&limit=`` (per question),
  ``GET /v1/runs/compare?a=&b=`` (each method's scores side by side).
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query
from fastapi.params import Depends
from pydantic import BaseModel, ConfigDict, Field, field_validator

from biorag.config import Settings
from biorag.corpus.datasets import canonical_name
from biorag.errors import BioragError
from biorag.eval.report.writer import write_report
from biorag.eval.run.records import read_predictions
from biorag.eval.run.runner import run_eval
from biorag.executor import build_executor
from biorag.methods.registry import METHODS
from biorag.runtime import Runtime
from biorag.serve.worker import QueueWorker
from biorag.util.files import write_json_atomic
from biorag.util.progress import observe_progress

log = logging.getLogger("biorag.serve")
STATE_FILE = "serve_run.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_RUN_QUESTIONS = 2000


class RunRequest(BaseModel):
    """``POST /v1/runs``: what to evaluate."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="the run's name: letters, digits, '.', '_', '-'")
    dataset: str = Field(description="pubmedqa, mirage, medqa, mmlu, medmcqa, bioasq, ...")
    data: str = Field(description="the dataset's file or folder, inside the server's --datasets")
    methods: list[str] = Field(min_length=1, max_length=10)
    split: str | None = None
    setting: str | None = None
    limit: int = Field(default=50, ge=1, le=MAX_RUN_QUESTIONS)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("a run name is 1-64 letters, digits, '.', '_' or '-'")
        if value == "compare":
            raise ValueError("'compare' names the comparison of two runs; choose another name")
        return value


class RunManager(QueueWorker[str]):
    """The runs of one server; one worker thread answers them in turn."""

    thread_name = "biorag-runs"

    def __init__(
        self, root: Path, datasets: Path | None, runtime: Runtime, settings: Settings
    ) -> None:
        super().__init__()
        self.root, self.datasets, self.rt, self.settings = Path(root), datasets, runtime, settings

    def _recover(self) -> None:
        """Queue again the runs a stopped server left (they resume from their answers)."""
        self.root.mkdir(parents=True, exist_ok=True)
        for state in sorted(self._states(), key=lambda s: s.get("created_at", 0)):
            if state.get("status") in ("queued", "running"):
                self._write(state["name"], status="queued", resumed=state.get("resumed", 0) + 1)
                self._queue.put(state["name"])

    # -- starting and reading ------------------------------------------------------------------
    def submit(self, req: RunRequest) -> dict[str, Any]:
        if self.datasets is None:  # the server's configuration, not the request's mistake
            raise HTTPException(404, "this server runs no evaluations: it was started without "
                                     "a datasets folder (biorag serve --datasets DIR)")  # fmt: skip
        canonical_name(req.dataset)
        unknown = [m for m in req.methods if m not in METHODS]
        if unknown:
            raise BioragError(
                f"unknown methods {unknown}; choose from {', '.join(sorted(METHODS))}"
            )
        self.data_path(req.data)
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            (self.root / req.name).mkdir()  # one request creates it; a second one is told
        except FileExistsError:
            raise BioragError(f"a run named {req.name!r} exists; choose another name") from None
        state = {**req.model_dump(), "status": "queued", "created_at": time.time(), "done": 0,
                 "total": None, "resumed": 0, "error": None}  # fmt: skip
        write_json_atomic(self.root / req.name / STATE_FILE, state)
        self.start()
        self._queue.put(req.name)
        return state

    def data_path(self, data: str) -> Path:
        """``data`` inside the datasets directory, or a clear error."""
        assert self.datasets is not None
        root = self.datasets.resolve()
        try:
            path = (root / data).resolve()
            found = path.is_relative_to(root) and path.exists()
        except (OSError, ValueError):  # a NUL byte, a name too long...
            found = False
        if not found:
            raise BioragError(f"no dataset {data!r} in the server's datasets directory")
        return path

    def _scrub(self, text: str) -> str:
        """``text`` without the server's paths (datasets by their place in --datasets)."""
        if self.datasets is not None:
            for root in (str(self.datasets.resolve()), str(self.datasets)):
                text = text.replace(root + "/", "")
                # the folder itself (a run of data=".") by what a client calls it
                text = re.sub(re.escape(root) + r"(?![\w.-])", "the datasets folder", text)
        return text.replace(str(self.root), "the server")

    def run_dir(self, name: str) -> Path:
        path = self.root / name
        if not _NAME.match(name) or not path.is_dir():
            raise HTTPException(404, f"no run {name!r}")
        return path

    def _states(self) -> list[dict[str, Any]]:
        out = []
        for f in self.root.glob(f"*/{STATE_FILE}"):
            try:
                out.append(json.loads(f.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                log.warning("ignoring %s: not readable JSON", f)
        return out

    def listing(self) -> list[dict[str, Any]]:
        runs = []
        for d in sorted(p for p in self.root.glob("*") if p.is_dir() and _NAME.match(p.name)):
            runs.append(self.summary(d.name, with_report=False))
        return runs

    def summary(self, name: str, with_report: bool = True) -> dict[str, Any]:
        d = self.run_dir(name)
        state = _read_json(d / STATE_FILE) or {"name": name, "status": "done"}
        metrics = _read_json(d / "metrics.json")
        report = d / "report.md"
        text = report.read_text(encoding="utf-8") if with_report and report.is_file() else None
        return {
            **state,
            "name": name,
            "metrics": metrics,
            "scores": {
                m: flat_scores(v.get("scores") or {})
                for m, v in ((metrics or {}).get("methods") or {}).items()
            },
            **({"report": text} if with_report else {}),
        }

    def answers(self, name: str, method: str | None, offset: int, limit: int) -> dict[str, Any]:
        rows = read_predictions(self.run_dir(name) / "predictions.jsonl")
        if method:
            rows = [r for r in rows if r["method"] == method]
        # the question and its options too, so a reader sees what was asked and answered
        # (a run recorded before records kept the question shows its id only)
        keep = ("question_id", "question", "options", "method", "prediction", "answer_text",
                "gold", "correct", "parse_failed", "error", "seconds", "question_type")  # fmt: skip
        page = [{k: r.get(k) for k in keep} for r in rows[offset : offset + limit]]
        return {"run": name, "total": len(rows), "answers": page}

    # -- running ---------------------------------------------------------------------------------
    def _write(self, name: str, **changes: Any) -> None:
        path = self.root / name / STATE_FILE
        state = _read_json(path) or {}
        write_json_atomic(path, {**state, **changes})

    def _attempt(self, name: str) -> None:
        if self._stopping.is_set():
            return  # it stays queued: the next server starts it again
        try:
            self._run(name)
        except Exception as e:
            if self._stopping.is_set():  # stopped, or failed as the server closed: resume later
                log.info("run %s stopped with the server (%s); it resumes", name, e)
                self._write(name, status="queued")
            elif isinstance(e, BioragError):
                self._write(name, status="failed", error=self._scrub(" ".join(str(e).split())))
            else:
                log.exception("run %s failed", name)
                error = "the run failed; the server's log says why"
                self._write(name, status="failed", error=error)

    def _run(self, name: str) -> None:
        state = _read_json(self.root / name / STATE_FILE) or {}
        self._write(name, status="running", started_at=time.time())
        last = [0.0]

        def step(desc: str, done: int, total: int | None) -> None:
            if self._stopping.is_set():
                raise _Stopped  # between two answers: the run's workers end, it resumes later
            if time.monotonic() - last[0] >= 0.5 or done == total:
                last[0] = time.monotonic()
                self._write(name, done=done, total=total)

        # its own searcher and models (closed after it), the server's embedder; answered on the
        # Ray cluster when [executor] names one
        executor = build_executor(self.settings.executor)
        try:
            with (
                observe_progress(step),
                Runtime(self.settings, self.rt.index_paths, embedder=self.rt.embedder) as base,
            ):
                run_eval(self.settings, state["dataset"], self.data_path(state["data"]),
                         split=state.get("split"), setting=state.get("setting"),
                         index_paths=list(self.rt.index_paths), methods=state["methods"],
                         out_dir=self.root / name, limit=state.get("limit"), runtime=base,
                         executor=executor)  # fmt: skip
        finally:
            executor.close()

        write_report(self.root / name)
        self._write(name, status="done", finished_at=time.time())


class _Stopped(Exception):
    """The server is stopping: the run ends at its next answer and resumes on restart."""


def flat_scores(scores: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """A method's numeric scores as ``{"accuracy": ..., "yesno.macro_f1": ...}`` (counts out)."""
    out: dict[str, float] = {}
    for k, v in scores.items():
        if k in ("n", "answered", "unparseable", "missing", "errors"):
            continue
        if isinstance(v, dict):
            out |= flat_scores(v, f"{prefix}{k}.")
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out[f"{prefix}{k}"] = round(float(v), 4)
    return out


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def add_run_routes(app: FastAPI, runs: RunManager, key: Depends) -> None:
    """Mount the run endpoints on ``app``, guarded by ``key``."""
    import asyncio

    @app.get("/v1/runs", dependencies=[key])
    async def list_runs() -> dict[str, Any]:
        return {"runs": await asyncio.to_thread(runs.listing)}

    @app.post("/v1/runs", dependencies=[key], status_code=202)
    async def start_run(body: RunRequest) -> dict[str, Any]:
        return await asyncio.to_thread(runs.submit, body)

    @app.get("/v1/runs/compare", dependencies=[key])
    async def compare(a: str, b: str) -> dict[str, Any]:
        left, right = await asyncio.gather(
            asyncio.to_thread(runs.summary, a), asyncio.to_thread(runs.summary, b)
        )
        methods = sorted(set(left["scores"]) | set(right["scores"]))
        side = {m: {"a": left["scores"].get(m), "b": right["scores"].get(m)} for m in methods}
        return {"a": a, "b": b, "methods": side}

    @app.get("/v1/runs/{name}", dependencies=[key])
    async def get_run(name: str) -> dict[str, Any]:
        return await asyncio.to_thread(runs.summary, name)

    @app.get("/v1/runs/{name}/answers", dependencies=[key])
    async def answers(
        name: str,
        method: str | None = None,
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=500),
    ) -> dict[str, Any]:
        return await asyncio.to_thread(runs.answers, name, method, offset, limit)
