"""Retrieve: BM25, dense and hybrid search over index directories, query formulation, TREC runs."""
