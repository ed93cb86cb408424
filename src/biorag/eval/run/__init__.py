"""The resumable evaluation runner: a benchmark's questions answered by every method into a run
directory (``predictions.jsonl``), judged (:mod:`biorag.eval.judging`) and scored into
``metrics.json``; its setup, leakage guard, entity masking and Ray workers."""
