"""Memories: the model, the ledger that alone changes a status, writes, the owner's review, and the
promotion, slot, entity and forget rules (the ``*_policy`` modules, pure)."""
