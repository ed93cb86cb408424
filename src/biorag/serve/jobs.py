"""Document jobs of ``biorag serve``: add uploaded files to a served index, or remove documents
from one, in a background thread, one job at a time, while searches go on.

Each job is a directory under the server's data directory (``jobs/<id>/``: ``job.json``, written
atomically at every step, and the uploaded ``files/``). A job the server stopped in (a restart,
a crash) is queued again when the next server starts, and resumes: adding is idempotent (content
ids), the index build picks up its pending documents, and removing an id already gone is a
no-op. Searches read the previous state of the index until the job has rebuilt it; then the
runtime's searcher is swapped for one over the new state.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from biorag.config import ExecutorSettings, Settings
from biorag.corpus.loaders import load_corpora
from biorag.errors import BioragError
from biorag.executor import build_executor
from biorag.retrieve.index import IndexDir
from biorag.runtime import Runtime
from biorag.serve.worker import QueueWorker
from biorag.util.files import write_json_atomic
from biorag.util.progress import observe_progress

log = logging.getLogger("biorag.serve")

JOB_FILE = "job.json"
UNFINISHED = ("queued", "running")
#: Finished jobs kept (with their folders) when a server starts; older ones are removed.
KEEP_FINISHED = 200
#: Job ids are ours (hex); anything else in a URL is not a job.
_JOB_ID = re.compile(r"^[0-9a-f]{12}$")
#: An uploaded file keeps its name's safe characters (and so its extension, for ``auto``).
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class UploadTooLarge(BioragError):
    """The uploaded files are over the server's upload limit (a 413)."""


class _Stopped(Exception):
    """The server is stopping: the job stops at its next step and resumes on restart."""


@dataclass
class Job:
    """One add or remove job and how far it got."""

    id: str
    kind: str  # "add" | "remove"
    index: str  # the served index's name
    created_at: float
    status: str = "queued"  # queued | running | done | failed
    files: list[str] = field(default_factory=list)  # add: the stored upload names
    format: str = "auto"
    keys: list[str] = field(default_factory=list)  # remove: content ids or source ids
    step: str = ""  # loading, chunking, embedding, indexing
    done: int = 0
    total: int | None = None
    started_at: float | None = None
    finished_at: float | None = None
    resumed: int = 0  # times a new server picked it up again
    # the index's documents when the job first ran: what a resumed job did is counted from it
    documents_before: int | None = None
    report: dict[str, Any] | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class JobManager(QueueWorker[str]):
    """The job queue of one server: submit, list, follow; one worker thread runs the jobs."""

    thread_name = "biorag-jobs"

    def __init__(
        self,
        root: Path,
        runtime: Runtime,
        settings: Settings,
        max_upload_bytes: int,
        keep_finished: int = KEEP_FINISHED,
    ) -> None:
        super().__init__()
        self.root, self.rt, self.settings = Path(root), runtime, settings
        self.max_upload_bytes = max_upload_bytes
        self.keep_finished = keep_finished
        self._jobs: dict[str, Job] = {}

    # -- lifecycle -----------------------------------------------------------------------------
    def _recover(self) -> None:
        """Load the jobs on disk and queue again the unfinished ones."""
        self.root.mkdir(parents=True, exist_ok=True)
        for path in sorted(self.root.glob(f"*/{JOB_FILE}")):
            job = _read_job(path)
            if job is None:
                continue
            self._jobs[job.id] = job
        self._prune()
        for job in sorted(self._jobs.values(), key=lambda j: j.created_at):
            if job.status in UNFINISHED:
                job.status, job.resumed = "queued", job.resumed + 1
                self._save(job.to_dict())
                self._queue.put(job.id)
                log.info("job %s (%s) resumes", job.id, job.kind)

    def _prune(self) -> None:
        """Forget the oldest finished jobs beyond ``keep_finished`` (their folders too)."""
        finished = sorted(
            (j for j in self._jobs.values() if j.status in ("done", "failed")),
            key=lambda j: j.created_at,
        )
        for job in finished[: max(0, len(finished) - self.keep_finished)]:
            del self._jobs[job.id]
            shutil.rmtree(self.root / job.id, ignore_errors=True)

    # -- submitting ----------------------------------------------------------------------------
    def submit_add(self, index: str | None, uploads: list[tuple[str, BinaryIO]], fmt: str) -> Job:
        """Store ``uploads`` (name, stream), check they load as a corpus, and queue their add.

        A file over the upload limit, a format that does not fit or files holding no document
        is refused here (nothing stored, nothing queued)."""
        name = self.index_name(index)
        if not uploads:
            raise BioragError("no files were uploaded; send one or more as multipart 'files'")
        job = Job(id=uuid.uuid4().hex[:12], kind="add", index=name, created_at=time.time())
        files = self.root / job.id / "files"
        files.mkdir(parents=True)
        try:
            self._store_uploads(uploads, files, job)
            try:
                loaded = load_corpora([files / f for f in job.files], fmt)
            except BioragError as e:  # name the file as uploaded, not where the server keeps it
                raise BioragError(self._scrub(job, str(e))) from None
            if not loaded.documents:
                raise BioragError(
                    f"the uploaded files hold no document in format {fmt!r} "
                    f"({len(loaded.skipped)} records skipped); send JSON Lines, PubMed XML, "
                    "or text/Markdown files"
                )
        except BaseException:
            shutil.rmtree(self.root / job.id, ignore_errors=True)
            raise
        job.format = fmt
        return self._queue_job(job)

    def submit_remove(self, index: str | None, keys: list[str]) -> Job:
        """Queue the removal of documents (content ids or source ids)."""
        name = self.index_name(index)
        job = Job(id=uuid.uuid4().hex[:12], kind="remove", index=name, created_at=time.time())
        job.keys = list(keys)
        return self._queue_job(job)

    def _scrub(self, job: Job, text: str) -> str:
        """``text`` without the server's paths: an upload's files by their names."""
        files = str(self.root / job.id / "files")
        text = re.sub(re.escape(files) + r"/\d{3}/", "", text)
        text = text.replace(files, "the upload").replace(str(self.root), "the server")
        for path in self.rt.index_paths:
            text = text.replace(str(path), job.index)
        return text

    def _public(self, job: Job, report: Any) -> Any:
        """A build report without the server's file paths."""
        if isinstance(report, dict):
            return {k: self._public(job, v) for k, v in report.items() if k != "skipped_file"}
        if isinstance(report, list):
            return [self._public(job, v) for v in report]
        return self._scrub(job, report) if isinstance(report, str) else report

    def _store_uploads(self, uploads: list[tuple[str, BinaryIO]], into: Path, job: Job) -> None:
        size = 0
        for i, (given, stream) in enumerate(uploads):
            # one folder per file: the file keeps its own (cleaned) name, which the text
            # loader makes its document's source id
            stem = _UNSAFE.sub("_", Path(given or f"upload{i}").name).lstrip(".")[-100:]
            stored = f"{i:03d}/{stem or 'upload'}"
            (into / f"{i:03d}").mkdir()
            with open(into / stored, "wb") as out:
                while block := stream.read(1 << 20):
                    size += len(block)
                    if size > self.max_upload_bytes:
                        raise UploadTooLarge(
                            f"the uploaded files are over the server's upload limit of "
                            f"{self.max_upload_bytes} bytes; split them over several uploads"
                        )
                    out.write(block)
            job.files.append(stored)

    def _queue_job(self, job: Job) -> Job:
        state = job.to_dict()  # as submitted: the worker may take it at once
        self._save(state)
        with self._lock:
            self._jobs[job.id] = job
        self._queue.put(job.id)
        return Job(**state)

    def index_name(self, index: str | None) -> str:
        """The served index named ``index`` (by default the first), or a clear error."""
        names = self.rt.searcher.names
        if index is None:
            return names[0]
        if index not in names:
            raise BioragError(f"unknown index {index!r}; this server serves {', '.join(names)}")
        return index

    # -- reading -------------------------------------------------------------------------------
    def get(self, job_id: str) -> Job | None:
        if not _JOB_ID.match(job_id):
            return None
        with self._lock:
            return self._jobs.get(job_id)

    def list(self, limit: int = 100) -> list[dict[str, Any]]:
        with self._lock:
            jobs = sorted(self._jobs.values(), key=lambda j: -j.created_at)[:limit]
            return [j.to_dict() for j in jobs]

    def snapshot(self, job_id: str) -> dict[str, Any] | None:
        job = self.get(job_id)
        if job is None:
            return None
        with self._lock:
            return job.to_dict()

    # -- running -------------------------------------------------------------------------------
    def _attempt(self, job_id: str) -> None:
        job = self._jobs[job_id]  # one taken while stopping is left queued (``_Stopped``)
        try:
            self._run(job)
        except _Stopped:
            self._update(job, status="queued", step="stopped with the server; resumes")
        except Exception as e:
            if self._stopping.is_set():  # failed as the server closed under it: resume later
                log.info("job %s stopped with the server (%s); it resumes", job.id, e)
                self._update(job, status="queued", step="stopped with the server; resumes")
                return
            if isinstance(e, BioragError):
                error = self._scrub(job, " ".join(str(e).split()))
            else:  # a bug: its traceback goes to the log, the job says so
                log.exception("job %s failed", job.id)
                error = "the job failed; the server's log says why"
            self._finish(job, "failed", error=error)
            shutil.rmtree(self.root / job.id / "files", ignore_errors=True)

    def _run(self, job: Job) -> None:
        if self._stopping.is_set():
            raise _Stopped
        self._update(job, status="running", started_at=time.time(), step="loading", done=0)
        path = self.rt.index_paths[self.rt.searcher.names.index(job.index)]
        last = [0.0]

        def step(desc: str, done: int, total: int | None) -> None:
            if self._stopping.is_set():
                raise _Stopped
            now = time.monotonic()
            changed = desc != job.step or done == total or now - last[0] >= 0.5
            if changed:
                last[0] = now
                self._update(job, step=desc, done=done, total=total)

        executor = build_executor(  # [executor] kind = "ray": an add's chunks embedded there
            self.settings.executor if job.kind == "add" else ExecutorSettings()
        )
        try:
            with (
                observe_progress(step),
                IndexDir(
                    path, self.rt.embedder, retrieval=self.settings.retrieval,
                    index=self.settings.index, executor=executor,
                    embed_settings=self.settings.embed,
                ) as idx,
            ):  # fmt: skip
                if job.documents_before is None:
                    self._update(job, documents_before=idx.store.count_documents())
                report = self._add(job, idx) if job.kind == "add" else self._remove(job, idx)
        finally:
            executor.close()
        self.rt.reload_searcher()
        self._finish(job, "done", report=report)
        shutil.rmtree(self.root / job.id / "files", ignore_errors=True)

    def _add(self, job: Job, idx: Any) -> dict[str, Any]:
        loaded = load_corpora([self.root / job.id / "files" / f for f in job.files], job.format)
        limit = self.settings.corpus.max_record_chars
        report = idx.add(loaded, batch_size=64, max_record_chars=limit).to_dict()
        if job.documents_before is not None:  # a resumed job: what all its attempts added
            report["documents_new_this_attempt"] = report["documents_new"]
            report["documents_new"] = report["documents_total"] - job.documents_before
        return {**self._public(job, report), "index": job.index}

    def _remove(self, job: Job, idx: Any) -> dict[str, Any]:
        found = [k for k in job.keys if idx.store.resolve_document_ids(k)]
        if found:
            report = idx.remove(found).to_dict()
        else:  # gone already: removed by this job before a restart, or never there
            report = {"documents_removed": 0, "documents_total": idx.store.count_documents()}
        if job.documents_before is not None:  # a resumed job: what all its attempts removed
            report["documents_removed"] = job.documents_before - report["documents_total"]
        report["not_found"] = [k for k in job.keys if k not in found]
        return {**self._public(job, report), "index": job.index}

    def _update(self, job: Job, **changes: Any) -> None:
        with self._lock:  # readers see a whole state; the file is written outside the lock
            for k, v in changes.items():
                setattr(job, k, v)
            state = job.to_dict()
        self._save(state)

    def _finish(self, job: Job, status: str, **changes: Any) -> None:
        self._update(job, status=status, finished_at=time.time(), step="", **changes)
        log.info("job %s (%s) %s%s", job.id, job.kind, status, f": {job.error}" * bool(job.error))

    def _save(self, state: dict[str, Any]) -> None:
        write_json_atomic(self.root / state["id"] / JOB_FILE, state)


def _read_job(path: Path) -> Job | None:
    import json

    try:
        return Job(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as e:
        log.warning("ignoring job file %s: %s", path, e)
        return None
