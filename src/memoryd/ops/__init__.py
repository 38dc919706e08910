"""The store as a whole, for the owner: backup, export and import, re-embedding, doctor, status, the
running server's record."""
