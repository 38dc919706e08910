#!/usr/bin/env bash
# Install memoryd and run it: `memoryd serve` on the embedded SQLite default with the local
# embedder — the HTTP API and the owner's web page on http://127.0.0.1:8765, the background
# worker and the daily consolidation. Ctrl-C stops it. Extra arguments go to `memoryd serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
.venv/bin/memoryd init
echo "log in to the web page at the address below with the token in the file named above"
exec .venv/bin/memoryd serve "$@"
