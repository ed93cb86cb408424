"""QA methods: each composes the pipeline stages (retrieve, extract, graph, summarize, answer)."""
