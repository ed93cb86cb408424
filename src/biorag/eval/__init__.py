"""Eval: metrics, the resumable runner and its reports (benchmark readers: corpus.datasets)."""
