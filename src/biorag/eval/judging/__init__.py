"""The five-point judged answer score: one judge call (:mod:`.five_point`) and the judging of a
run's answers into ``judgments.jsonl`` (:mod:`.judge_run`)."""
