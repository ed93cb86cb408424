"""Eval: metrics (:mod:`.metrics`), the resumable runner (:mod:`.run`), the five-point judged answer
score (:mod:`.judging`), CLAIMS' component metrics (:mod:`.components`) and the reports of runs
(:mod:`.report`); benchmark readers: corpus.datasets."""
