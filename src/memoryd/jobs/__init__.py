"""Background work: job records and retry policy (``model``), the worker (``worker``), store-wide
leases (``lease``)."""
