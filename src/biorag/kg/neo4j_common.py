"""What the Neo4j stores share: importing the official driver and connecting.

Connection conventions (both :mod:`biorag.kg.neo4j_store` and :mod:`biorag.kg.typed_neo4j_store`):
``uri`` (``bolt://host:7687`` / ``neo4j://...``), ``user`` and the NAME of the environment
variable holding the password (``BIORAG_NEO4J_PASSWORD`` by default; unset means no
authentication). The password is never logged nor put in an error message.
"""

from __future__ import annotations

import os
from typing import Any

from biorag.errors import BioragError

PASSWORD_ENV = "BIORAG_NEO4J_PASSWORD"


def import_neo4j() -> Any:
    """The ``neo4j`` driver module, or a BioragError saying how to install it."""
    try:
        import neo4j
    except ImportError as e:
        raise BioragError(
            "the neo4j backend needs the official driver: pip install 'biorag[neo4j]' "
            "(or use backend 'sqlite', which needs no server)"
        ) from e
    return neo4j


def connect(neo4j: Any, uri: str, user: str, password_env: str = PASSWORD_ENV) -> Any:
    """A driver connected to ``uri`` (connectivity verified), or a one-line BioragError."""
    password = os.environ.get(password_env)
    auth = (user, password) if password is not None else None
    try:
        driver = neo4j.GraphDatabase.driver(uri, auth=auth)
        driver.verify_connectivity()
    except Exception as e:  # the driver's errors never contain the password
        hint = "" if password is not None else f" (no password: {password_env} is not set)"
        raise BioragError(
            f"cannot connect to Neo4j at {uri} as {user!r}{hint}: {type(e).__name__}: {e}"
        ) from e
    return driver
