"""The owner's evaluation set: ``policy`` (pure: cases, verdicts, scores), ``run`` (against the
store), ``candidate_view`` (a candidate embedder's view of it)."""
