"""Models and endpoints: the LLM routes, the embedders (local and remote), the tokenizer, and
bounded calls to model endpoints."""
