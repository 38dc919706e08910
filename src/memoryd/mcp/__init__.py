"""``memoryd mcp``: the model's tools over the Model Context Protocol."""
