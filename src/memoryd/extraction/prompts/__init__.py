"""Versioned prompts, kept as files in the package. A stored memory records the version."""
