"""Extraction: the model reads conversation and proposes memories (``extractor``, ``queue``, the
versioned ``prompts``), and imported chat histories (``chat_export_policy`` reads an export, pure;
``chat_import`` queues it)."""
