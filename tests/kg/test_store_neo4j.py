"""Neo4j backend without a server: the missing driver and connection errors.

The store contract itself runs against a real server in test_store_contract.py, only when
``BIORAG_NEO4J_URI`` is set.
"""

from __future__ import annotations

import sys
import types

import pytest

from biorag.errors import BioragError
from biorag.kg import open_store


def test_missing_driver_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "neo4j", None)  # import neo4j -> ImportError
    with pytest.raises(BioragError, match=r"biorag\[neo4j\]"):
        open_store("bolt://localhost:7687", "neo4j")


def test_connection_error_names_uri_never_password(monkeypatch) -> None:
    seen = {}

    def driver(uri, auth=None):
        seen["auth"] = auth
        raise OSError(f"Couldn't connect to {uri}")

    fake = types.SimpleNamespace(
        GraphDatabase=types.SimpleNamespace(driver=driver),
        RoutingControl=types.SimpleNamespace(READ="r", WRITE="w"),
    )
    monkeypatch.setitem(sys.modules, "neo4j", fake)
    monkeypatch.setenv("MY_KG_PASSWORD", "s3cret-pw")
    with pytest.raises(BioragError) as err:
        open_store("bolt://kg.example:7687", "neo4j", user="alice", password_env="MY_KG_PASSWORD")
    assert "bolt://kg.example:7687" in str(err.value) and "alice" in str(err.value)
    assert "s3cret-pw" not in str(err.value)
    assert seen["auth"] == ("alice", "s3cret-pw")
    monkeypatch.delenv("BIORAG_NEO4J_PASSWORD", raising=False)
    with pytest.raises(BioragError, match="BIORAG_NEO4J_PASSWORD is not set"):
        open_store("bolt://kg.example:7687", "neo4j")
    assert seen["auth"] is None
