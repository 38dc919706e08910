"""The command line starts light: ``--help``, ``list`` and a recall on a store with no
memories import none of the heavy libraries (numpy, the model runtime, the tokenizer, the
PDF, web and HTTP stacks). Not timed: bench/bench_startup.py measures the time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Run a command in-process, then report which of these modules it imported.
_PROBE = """
import json, sys
from memoryd.cli import main
try:
    main(args=json.loads(sys.argv[1]), prog_name="memoryd")
except SystemExit as stop:
    assert not stop.code, stop.code
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""

HEAVY = [
    "numpy",
    "onnxruntime",
    "tokenizers",
    "tiktoken",
    "sqlite_vec",
    "pypdfium2",
    "markitdown",
    "trafilatura",
    "PIL",
    "fastapi",
    "starlette",
    "uvicorn",
    "pydantic",
    "httpx",
    "mcp",
    "openai",
    "anthropic",
    "psycopg",
]
# Light commands do not even reach the service.
HELP_ONLY = ["memoryd.service", "memoryd.wiring", "memoryd.kb.service", "memoryd.storage.sqlite"]


def _imported(args: list[str], home: Path, watched: list[str]) -> list[str]:
    env = {**os.environ, "MEMORYD_HOME": str(home)}
    env.pop("MEMORYD_DB", None)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(args), json.dumps(watched)],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("args", [["--help"], ["kb", "--help"], ["recall", "--help"]])
def test_help_imports_neither_heavy_libraries_nor_the_service(
    tmp_path: Path, args: list[str]
) -> None:
    assert _imported(args, tmp_path, HEAVY + HELP_ONLY) == []


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["recall", "where do I live?"],
        ["search", "coffee"],
        ["jobs"],
        ["status"],
        ["config", "show"],
    ],
)
def test_commands_on_an_empty_store_import_no_heavy_library(
    tmp_path: Path, args: list[str]
) -> None:
    _imported(["init"], tmp_path, [])
    assert _imported(args, tmp_path, HEAVY) == []


def test_recall_with_memories_loads_the_model_it_needs(tmp_path: Path) -> None:
    _imported(["init"], tmp_path, [])
    _imported(["remember", "I live in Lisbon"], tmp_path, [])
    found = _imported(["recall", "where do I live?"], tmp_path, ["onnxruntime", "tiktoken"])
    assert found == ["onnxruntime", "tiktoken"]
