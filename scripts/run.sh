#!/usr/bin/env bash
# Install memoryd and run it: `memoryd serve` on the embedded SQLite default with the local
# embedder — the HTTP API and the owner's web page on http://127.0.0.1:8765, the background
# worker and the daily consolidation. Ctrl-C stops it. Extra arguments go to `memoryd serve`.
#
# The first run installs into .venv (a few minutes, pip's progress shown); later runs start at
# once unless pyproject.toml changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.memoryd-installed
wanted="$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())')"
if [ ! -x .venv/bin/memoryd ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "installing memoryd into .venv (the first time takes a few minutes)..."
    python3 -m venv .venv
    .venv/bin/python -m pip install --upgrade pip --progress-bar on
    .venv/bin/python -m pip install -e . --progress-bar on
    echo "$wanted" >"$stamp"
fi
.venv/bin/memoryd init
cat <<'EOF'

memoryd is starting. Open the address printed below in a browser and log in with the token
from the file named above. This terminal now belongs to the server (Ctrl-C stops it): use a
second terminal for the command line, with `. .venv/bin/activate` first (or call
.venv/bin/memoryd). Both use the same store.

EOF
exec .venv/bin/memoryd serve "$@"
