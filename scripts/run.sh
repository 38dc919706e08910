#!/usr/bin/env bash
# Install memoryd and start it on the embedded SQLite default with the local embedder.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
.venv/bin/memoryd init
.venv/bin/memoryd review
