"""Prompt templates of the VectorGraphRAG knowledge-graph operators (``.txt`` files)."""
