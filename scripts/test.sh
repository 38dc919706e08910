#!/usr/bin/env bash
# Install everything the test suite needs and run it (lint, types, tests).
set -euo pipefail
cd "$(dirname "$0")/.."
# The web page is driven in Debian's headless Chromium; install it (and its driver) if missing.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "chromium and chromium-driver are needed: sudo apt-get install chromium chromium-driver" >&2
        exit 1
    fi
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
# What scripts/run.sh checks before it reinstalls: this install covers it.
python3 -c 'import hashlib; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())' \
    >.venv/.memoryd-installed
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"
