"""Keeping an index directory's segments (:mod:`biorag.retrieve.segments`) up to date.

- **Adding** indexes the store's chunks after ``indexed_seq`` as one new segment (BM25 postings
  and a FAISS index of just those chunks), then merges the newest segments while the one before
  them is no larger than they are together (a binary counter: about log2(n / batch) segments,
  each row rewritten about that many times over its life). A merge extends the first segment's
  FAISS index with the others' vectors when it already has the kind the merged size calls for
  (HNSW adds cost what is added), otherwise builds one.
- **Removing** marks the chunks' rows deleted; a segment more than a quarter deleted is
  rewritten without them (or dropped when nothing in it is live).
- **Reconciling** compares the live rows with the store's chunks: rows of chunks the store no
  longer has (a removal cut short) are marked deleted; an index holding fewer chunks than the
  store (lost segments) is rebuilt.

Every step writes a complete segment directory first, then commits ``segments.json``
atomically, then deletes what it replaced; a killed step is finished or undone by the next.
An index of the earlier layout (one ``bm25/`` and one ``dense/``) becomes one segment on its
first update.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from biorag.config import RetrievalSettings
from biorag.errors import REBUILD_INDEX as REBUILD
from biorag.errors import DamagedFileError, IndexMismatchError, reading
from biorag.retrieve.bm25_terms import TermSegment
from biorag.retrieve.dense import DenseIndex
from biorag.retrieve.segments import (
    FORMAT,
    SEGMENTS_DIR,
    STATE,
    Segment,
    deleted_mask,
    read_state,
)
from biorag.util.files import write_dir_atomically, write_json_atomic

log = logging.getLogger(__name__)

MAX_SEGMENTS = 16
COMPACT_SHARE = 0.25
LEGACY_DIRS = ("bm25", "dense")
READ_BATCH = 4096


@contextmanager
def write_lock(path: Path) -> Iterator[None]:
    """Hold ``DIR/.write.lock`` (an exclusive ``flock``) while an index is written: a second
    writer (a CLI add beside a service job) waits instead of overwriting the first's segments."""
    import fcntl

    path.mkdir(parents=True, exist_ok=True)
    with open(path / ".write.lock", "a+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("index %s is being written by another process; waiting for it", path)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _json_list_bounds(path: Path) -> bool:
    """Whether ``path`` begins with ``[`` and ends with ``]`` (a cut or overwritten ids list
    does not)."""
    with open(path, "rb") as fh:
        first = fh.read(1)
        fh.seek(-1, 2)
        return first == b"[" and fh.read(1) == b"]"


def merge_start(sizes: list[int]) -> int | None:
    """Where the newest segments to merge begin (None: no merge): while the segment before
    them is no larger than they are together; at most ``MAX_SEGMENTS`` segments stay."""
    if len(sizes) < 2:
        return None
    j, total = len(sizes) - 1, sizes[-1]
    while j > 0 and sizes[j - 1] <= total:
        j -= 1
        total += sizes[j]
    if j == len(sizes) - 1:
        return len(sizes) - 2 if len(sizes) > MAX_SEGMENTS else None
    return j


class SegmentWriter:
    """Adds, merges, removes and reconciles the segments of the index at ``path``."""

    def __init__(self, path: Path, dim: int, settings: RetrievalSettings):
        self.path = Path(path)
        self.dim = dim
        self.settings = settings
        self.rebuilt = False  # set by update when every chunk was indexed anew
        self._replace_all = False  # the next segment replaces every other one (a rebuild)
        try:
            state = read_state(self.path)
        except (DamagedFileError, IndexMismatchError) as e:
            log.warning("%s; rebuilding the index's search segments", e)
            state = None
            self._replace_all = True
        self.legacy = state is None and any((self.path / d).exists() for d in LEGACY_DIRS)
        self.state: dict[str, Any] = state or {
            "format": FORMAT,
            "indexed_seq": 0,
            "next": 1,
            "segments": [],
        }

    # -- bookkeeping ----------------------------------------------------------------------------
    def _dir(self, name: str) -> Path:
        return self.path / SEGMENTS_DIR / name

    def _commit(self) -> None:
        write_json_atomic(self.path / STATE, self.state)
        if self.legacy:
            for d in LEGACY_DIRS:
                shutil.rmtree(self.path / d, ignore_errors=True)
            self.legacy = False

    def _collect_garbage(self) -> None:
        """Delete segment directories the committed state does not name (a killed step's)."""
        if (self.path / STATE).exists() and not self.legacy:
            for legacy in LEGACY_DIRS:  # a migration killed after its commit
                shutil.rmtree(self.path / legacy, ignore_errors=True)
        root = self.path / SEGMENTS_DIR
        keep = {s["name"] for s in self.state["segments"]}
        if root.is_dir():
            for d in root.iterdir():
                if d.name not in keep:
                    shutil.rmtree(d, ignore_errors=True)

    def _new_name(self) -> str:
        name = f"s{self.state['next']:06d}"
        self.state["next"] += 1
        return name

    def _write(self, terms: TermSegment, dense: DenseIndex, deleted: list[int]) -> dict[str, Any]:
        name = self._new_name()

        def write(tmp: Path) -> None:
            terms.save(tmp)
            dense.save(tmp / "dense")

        write_dir_atomically(self._dir(name), write)
        return {"name": name, "rows": terms.n, "deleted": deleted}

    def _load(self, info: dict[str, Any]) -> Segment:
        return Segment.load(self._dir(info["name"]), info, self.dim)

    def _ids(self, info: dict[str, Any]) -> list[str]:
        path = self._dir(info["name"]) / "dense" / "ids.json"
        with reading(path, "a segment's chunk ids", REBUILD):
            return list(json.loads(path.read_text(encoding="utf-8")))

    def _build_dense(self, ids: list[str], vectors: np.ndarray) -> DenseIndex:
        st = self.settings
        return DenseIndex.build(ids, vectors, kind=st.dense_index, hnsw_min_size=st.hnsw_min_size)

    def _kind_for(self, n: int) -> str:
        kind = self.settings.dense_index
        if kind == "auto":
            return "flat" if n < self.settings.hnsw_min_size else "hnsw"
        return kind

    @property
    def live_rows(self) -> int:
        return sum(self._live_sizes())

    # -- adding ---------------------------------------------------------------------------------
    def update(self, store: Any, bar: Any = None) -> list[str]:
        """Index what the store holds beyond ``indexed_seq``, merge, reconcile; returns the
        texts of the chunks indexed (``rebuilt``: all of the store's)."""
        self._collect_garbage()
        if self._damaged():
            self._start_rebuild()
        self.rebuilt = not self.state["segments"] or self._replace_all
        texts = self._add_new(store, bar)
        self._merge_tail()
        if self.reconcile(store):
            self.rebuilt = True
            texts = self._add_new(store, bar)
            self._merge_tail()
        if self.legacy or not (self.path / STATE).exists():
            self._commit()  # an empty index, or a legacy one with nothing left to move
        return texts

    def _damaged(self) -> list[str]:
        """Segments listed but unreadable (missing or damaged files), checked cheaply on every
        update: every array's header and size, the small JSON files, the ends of the ids list
        (parsing a million ids would cost each add half a second), the FAISS file's presence."""
        bad = []
        for info in self.state["segments"]:
            d = self._dir(info["name"])
            try:
                terms = json.loads((d / "bm25_terms.json").read_text(encoding="utf-8"))
                lengths = np.load(d / "bm25_lengths.npy", mmap_mode="r")
                for name in ("indptr", "rows", "tfs"):
                    np.load(d / f"bm25_{name}.npy", mmap_mode="r")
                meta = json.loads((d / "dense" / "meta.json").read_text(encoding="utf-8"))
                ok = (
                    lengths.shape[0] == int(meta["n"]) == info["rows"]
                    and _json_list_bounds(d / "dense" / "ids.json")
                    and "terms" in terms
                    and (d / "dense" / "index.faiss").stat().st_size > 0
                )
            except (OSError, ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                bad.append(info["name"])
        if bad:
            log.warning(
                "index %s: segments %s are missing or damaged; rebuilding the search segments",
                self.path, ", ".join(bad),
            )  # fmt: skip
        return bad

    def _start_rebuild(self) -> None:
        """Index every chunk again; the segments in use stay until the new one replaces them."""
        self.state["indexed_seq"] = 0
        self._replace_all = True

    def _add_new(self, store: Any, bar: Any) -> list[str]:
        seq = int(self.state["indexed_seq"])
        ids: list[str] = []
        texts: list[str] = []
        blobs: list[bytes] = []
        while rows := store.chunk_rows_after(seq, READ_BATCH):
            for s, cid, _doc, text, vec in rows:
                ids.append(cid)
                texts.append(text)
                blobs.append(vec)
                seq = s
            if bar is not None:
                bar.update(len(rows))
        if not ids:
            if self._replace_all:  # nothing stored: the rebuilt index is empty
                self.state["segments"] = []
                self._replace_all = False
                self._commit()
                self._collect_garbage()
            return []
        vectors = np.empty((len(ids), self.dim), dtype=np.float32)
        for i, blob in enumerate(blobs):
            vectors[i] = np.frombuffer(blob, dtype=np.float32)
        del blobs
        info = self._write(TermSegment.build(texts), self._build_dense(ids, vectors), [])
        if self._replace_all:
            self.state["segments"] = [info]
            self._replace_all = False
        else:
            self.state["segments"].append(info)
        self.state["indexed_seq"] = seq
        self._commit()
        self._collect_garbage()
        return texts

    def _merge_tail(self) -> None:
        while (j := merge_start(self._live_sizes())) is not None:
            self._merge(j)

    def _live_sizes(self) -> list[int]:
        return [s["rows"] - len(s["deleted"]) for s in self.state["segments"]]

    def _merge(self, j: int) -> None:
        infos = self.state["segments"][j:]
        segs = [self._load(i) for i in infos]
        terms = TermSegment.merge([(s.terms, None) for s in segs])
        deleted: list[int] = []
        offset = 0
        for info in infos:
            deleted += [r + offset for r in info["deleted"]]
            offset += info["rows"]
        first, rest = segs[0], segs[1:]
        kind = first.dense.kind
        if (
            kind in ("flat", "hnsw")  # IVF lists are trained for a size: built anew instead
            and kind == self._kind_for(offset)
            and first.terms.n >= offset - first.terms.n
        ):
            dense = first.dense
            for s in rest:
                dense.extend(s.ids, s.dense.vectors())
        else:
            ids = [i for s in segs for i in s.ids]
            dense = self._build_dense(ids, np.concatenate([s.dense.vectors() for s in segs]))
        merged = self._write(terms, dense, deleted)
        self.state["segments"][j:] = [merged]
        self._commit()
        self._collect_garbage()

    # -- removing -------------------------------------------------------------------------------
    def remove(self, chunk_ids: set[str]) -> int:
        """Mark the rows of ``chunk_ids`` deleted, then compact; returns rows marked."""
        self._collect_garbage()
        marked = 0
        for info in self.state["segments"]:
            gone = set(info["deleted"])
            rows = [r for r, c in enumerate(self._ids(info)) if c in chunk_ids and r not in gone]
            if rows:
                info["deleted"] = sorted(gone.union(rows))
                marked += len(rows)
        if marked:
            self._commit()
            self._compact()
        return marked

    def _compact(self) -> None:
        for i, info in reversed(list(enumerate(self.state["segments"]))):
            if len(info["deleted"]) <= COMPACT_SHARE * info["rows"]:
                continue
            if len(info["deleted"]) >= info["rows"]:
                del self.state["segments"][i]
            else:
                seg = self._load(info)
                keep = ~(deleted_mask(info["rows"], info["deleted"]))  # type: ignore[operator]
                ids = [c for c, k in zip(seg.ids, keep, strict=True) if k]
                terms = TermSegment.merge([(seg.terms, keep)])
                dense = self._build_dense(ids, seg.dense.vectors()[keep])
                self.state["segments"][i] = self._write(terms, dense, [])
            self._commit()
            self._collect_garbage()
        self._merge_tail()

    def reconcile(self, store: Any) -> bool:
        """Make the live rows match the store's embedded chunks; True when every chunk must be
        indexed again (the caller does: the new segment then replaces the old ones)."""
        expected = store.count_chunks(with_vectors=True)
        if self.live_rows > expected:
            known = set(store.embedded_chunk_ids())
            seen: set[str] = set()
            stale = 0
            for info in reversed(self.state["segments"]):  # the newest copy of a chunk stays
                gone = set(info["deleted"])
                for r, cid in reversed(list(enumerate(self._ids(info)))):
                    if r in gone:
                        continue
                    if cid not in known or cid in seen:
                        gone.add(r)
                        stale += 1
                    seen.add(cid)
                info["deleted"] = sorted(gone)
            log.warning("index %s: %d rows no longer stored marked deleted", self.path, stale)
            self._commit()
            self._compact()
        if self.live_rows < expected:
            log.warning(
                "index %s: its segments hold %d of the store's %d chunks; rebuilding them",
                self.path, self.live_rows, expected,
            )  # fmt: skip
            self._start_rebuild()
            return True
        return False
