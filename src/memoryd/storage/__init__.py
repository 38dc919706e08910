"""Storage: narrow protocols (``protocols``) and one module per backend that owns its SQL."""
