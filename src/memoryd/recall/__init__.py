"""Recall as a pipeline that flows one way: read the message (``read``, with ``bounds_policy``
and ``time_window_policy``) → run the legs (``legs``) → score and gate (``score``, with
``gate_policy``, ``relevance_policy`` and ``score_policy``) → cut and pack (``pack_policy``;
``context_policy`` and ``context_pack_policy`` for the context pack). ``policy`` holds every
number; ``run`` and ``context`` drive the stages."""
