"""The daily consolidation: ``policy`` and ``schedule_policy`` decide (pure), ``run`` applies."""
