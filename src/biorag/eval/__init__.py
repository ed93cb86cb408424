"""Eval: benchmark datasets, metrics, the resumable runner and its reports."""
