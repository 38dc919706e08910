"""Recall as a pipeline: read the message (``bounds_policy``, ``time_window_policy``), run the legs
(``legs``), score and gate (``evidence``, ``policy``), pack (``policy``, ``context_policy``);
``run`` and ``context`` do the I/O."""
