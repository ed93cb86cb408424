"""Reports of evaluation runs: ``report.md`` and ``accuracy.png`` (:mod:`.writer`) and the
judged and accounting sections (:mod:`.sections`)."""
