"""biorag: biomedical question answering grounded in the literature through knowledge graphs.

The facade :class:`biorag.BioRAG` indexes, searches and answers; the stages live in their own
packages (see ARCHITECTURE.md). Importing ``biorag`` loads no model and no heavy library.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["BioRAG", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "BioRAG":
        from biorag.api import BioRAG

        return BioRAG
    raise AttributeError(name)
