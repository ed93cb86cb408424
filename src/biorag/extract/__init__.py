"""Extract: propositional claims from chunks, and one (subject, predicate, object) per claim."""
