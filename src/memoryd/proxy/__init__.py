"""The OpenAI-compatible chat proxy's rules (the HTTP side is :mod:`memoryd.http.proxy`)."""
