"""Short content fingerprints of local model directories, for cache keys and model ids.

Two local models whose folders share a name (``runs/a/final`` and ``runs/b/final``) must not
share cached vectors or answers, and a model directory moved elsewhere should keep its id. So a
fingerprint hashes what is inside the directory, never where it is:

* :func:`dir_fingerprint` (sentence-transformers embedders): the content of the small
  ``.json`` / ``.txt`` files (configs, vocabularies) and the size of every other file. Its
  output is fixed: embedder model ids, and so existing indexes and vector caches, depend on it.
* :func:`model_fingerprint` (in-process LLMs): the content of every file up to
  :data:`FULL_HASH_LIMIT` bytes (configs, tokenizers, chat templates), and for larger files
  (weights) their size plus :data:`SAMPLES` evenly spaced :data:`SAMPLE_BYTES`-byte reads, so
  two fine-tunes of one base model (identical configs and weight sizes) differ. Hidden files
  and folders (``.git``, ``.cache``) are skipped.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

FULL_HASH_LIMIT = 32 * 1024 * 1024  # model_fingerprint hashes files up to this size entirely
SAMPLES = 64  # reads per larger file
SAMPLE_BYTES = 4096  # bytes per read


def _files(path: Path, skip_hidden: bool) -> list[Path]:
    """The regular files under ``path``, sorted by relative path."""
    out = []
    for f in sorted(path.rglob("*")):
        if not f.is_file():
            continue
        if skip_hidden and any(p.startswith(".") for p in f.relative_to(path).parts):
            continue
        out.append(f)
    return out


def dir_fingerprint(path: str | Path) -> str:
    """10 hex digits over the relative names of the files under ``path``, the content of its
    ``.json`` / ``.txt`` files under 1 MB and the size of every other file."""
    root = Path(path)
    h = hashlib.sha256()
    for f in _files(root, skip_hidden=False):
        h.update(f.relative_to(root).as_posix().encode())
        if f.suffix in {".json", ".txt"} and f.stat().st_size < 1_000_000:
            h.update(f.read_bytes())
        else:
            h.update(str(f.stat().st_size).encode())
    return h.hexdigest()[:10]


def _sampled(f: Path, size: int) -> bytes:
    """SAMPLES reads of SAMPLE_BYTES spread evenly over a file of ``size`` bytes."""
    step = max(1, (size - SAMPLE_BYTES) // max(1, SAMPLES - 1))
    parts = []
    with f.open("rb") as fh:
        for i in range(SAMPLES):
            fh.seek(min(i * step, max(0, size - SAMPLE_BYTES)))
            parts.append(fh.read(SAMPLE_BYTES))
    return b"".join(parts)


def model_fingerprint(path: str | Path) -> str:
    """16 hex digits over the relative names of the (non-hidden) files under ``path``, the
    content of those up to :data:`FULL_HASH_LIMIT` bytes, and the size and evenly spaced
    samples of larger ones."""
    root = Path(path)
    h = hashlib.sha256()
    for f in _files(root, skip_hidden=True):
        size = f.stat().st_size
        h.update(f"{f.relative_to(root).as_posix()}\0{size}\0".encode())
        h.update(f.read_bytes() if size <= FULL_HASH_LIMIT else _sampled(f, size))
    return h.hexdigest()[:16]
