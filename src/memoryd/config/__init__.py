"""Settings, resolved once from the command line, the environment and ``memoryd.toml``; editing
``memoryd.toml``."""
