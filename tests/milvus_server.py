"""A live Milvus server for the Milvus tests (the ``milvus_live`` fixture).

``BIORAG_TEST_MILVUS_URI`` set: that server is used (the tests drop the collections they make).
Unset: milvus-lite (installed by ``make test`` through ``scripts/install-milvus-lite.sh`` into
its own cached environment) is started in server mode on a free loopback port with a data
directory of the test session (``devkit/milvus.py``), and stopped after it. Neither available,
or no pymilvus client: the tests skip and say why; milvus-lite installed but not starting is a
failure.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest
from devkit.milvus import MilvusLite, milvus_lite_command


def milvus_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The body of the ``milvus_live`` fixture: a Milvus server's URI for the session."""
    if importlib.util.find_spec("pymilvus") is None:
        pytest.skip("pymilvus is not installed (pip install 'biorag[milvus]'; make test does)")
    external = os.environ.get("BIORAG_TEST_MILVUS_URI")
    if external:
        yield external
        return
    command, why = milvus_lite_command()
    if command is None:
        pytest.skip(why)
    server = MilvusLite(command, tmp_path_factory.mktemp("milvus") / "data")
    try:
        server.wait_ready()
        yield server.uri
    finally:
        server.stop()
