"""biorag: biomedical question answering grounded in the literature through knowledge graphs."""

__version__ = "0.1.0"
