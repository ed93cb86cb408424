"""What the Neo4j stores share: importing the official driver and connecting.

Connection conventions (both :mod:`biorag.kg.stores.flat_neo4j` and
:mod:`biorag.kg.stores.typed_neo4j`):
``uri`` (``bolt://host:7687`` / ``neo4j://...``), ``user`` and the NAME of the environment
variable holding the password (``BIORAG_NEO4J_PASSWORD`` by default; unset means no
authentication). The password is never logged nor put in an error message.
"""

from __future__ import annotations

import os
from typing import Any, TypedDict

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


class Neo4jConnection(TypedDict, total=False):
    """The connection keywords of a Neo4j store, passed on to :class:`Neo4jClient`."""

    user: str
    password_env: str
    database: str | None


class Neo4jClient:
    """The connection half of a Neo4j store: connect, create the schema, run queries, close.

    The statements of the class's ``schema`` run once on connection (``IF NOT EXISTS``, so
    re-running is safe).
    """

    schema: tuple[str, ...] = ()

    def __init__(
        self,
        uri: str,
        *,
        user: str = "neo4j",
        password_env: str = PASSWORD_ENV,
        database: str | None = None,
    ) -> None:
        neo4j = import_neo4j()
        self.uri, self.database = uri, database
        self._read = neo4j.RoutingControl.READ
        self.driver = connect(neo4j, uri, user, password_env)
        for statement in self.schema:
            self._run(statement)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r}, database={self.database!r})"

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.driver.close()

    def _run(self, query: str, read: bool = False, **params: Any) -> tuple[list[Any], Any]:
        kw: dict[str, Any] = {"database_": self.database}
        if read:
            kw["routing_"] = self._read
        records, summary, _ = self.driver.execute_query(query, params, **kw)
        return records, summary

    def _max_seq(self, query: str) -> int:
        """The largest ``seq`` the query returns as ``m`` (-1 when there is none)."""
        records, _ = self._run(query, read=True)
        m = records[0]["m"] if records else None
        return -1 if m is None else int(m)
