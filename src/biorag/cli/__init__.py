"""The ``biorag`` command line (Typer)."""
