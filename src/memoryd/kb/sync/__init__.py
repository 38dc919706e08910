"""Synced sources: folders, files and URLs the service keeps current (``model`` the records,
``rules`` and ``plan`` the pure decisions, ``scan`` and ``run`` the I/O, ``watch`` the
file-system notifications, ``loop`` the background thread)."""
