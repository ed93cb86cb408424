"""The options that name a Neo4j (Bolt/openCypher) server, shared by ``kg`` and ``strata``."""

from __future__ import annotations

import typer

NEO4J_URI = typer.Option(None, "--neo4j-uri", help="bolt://host:7687 (with --backend neo4j)")
NEO4J_USER = typer.Option("neo4j", "--neo4j-user", help="Neo4j user")
NEO4J_DATABASE = typer.Option(None, "--neo4j-database", help="Neo4j database (server default)")
NEO4J_PASSWORD_ENV = typer.Option(
    "BIORAG_NEO4J_PASSWORD",
    "--neo4j-password-env",
    help="NAME of the environment variable holding the Neo4j password",
)
