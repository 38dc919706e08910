"""Every example in README.md and docs/ runs as written, so none can rot.

Each Markdown file is followed from top to bottom in a fresh home directory (``HOME`` is a
temporary folder, so memoryd's default home is too, exactly as a new user's would be) with the
project's ``.venv`` on ``PATH``: ``sh`` blocks run in bash with ``-e``, ``python`` blocks in the
project's interpreter, both in one working folder that holds the clone's ``.venv``,
``scripts`` and ``pyproject.toml``; a block marked ``<!-- docs: background -->`` (the service)
runs until the file is done, once ``/v1/health`` answers on 8765. ``json`` and ``toml`` blocks
are parsed; an MCP client configuration is started and must list the model's tools. Ollama's
address answers as an OpenAI-compatible stand-in (tests/e2e/docs_blocks.py), so the examples
that turn on extraction or an embeddings endpoint run too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .docs_blocks import DIRECTIVES, PARSED, RUN, SHOWN, Block, FakeOllama, blocks_of

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The README's first block: the service, then the whole test suite, which is this run itself.
SET_UP = ("bash scripts/run.sh", "bash .ci/run")
SERVICE = "http://127.0.0.1:8765/v1/health"
BLOCK_TIMEOUT = 600
# Commands with subcommands: docs/cli.md names each subcommand ("kb ingest").
GROUPS = frozenset({"kb", "config", "eval"})
START_TIMEOUT = 300


def _free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def ollama() -> Iterator[FakeOllama]:
    for port in (11434, 8765):
        assert _free(port), f"port {port} is in use: the docs' examples need it free"
    with FakeOllama() as running:
        yield running


class Reader:
    """A new user following one file: their home, their working folder, their shell."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.work = root / "work"
        self.home.mkdir()
        self.work.mkdir()
        for name in (".venv", "scripts", "pyproject.toml"):
            (self.work / name).symlink_to(ROOT / name)
        self.env = {
            "HOME": str(self.home),
            "PATH": f"{self.work / '.venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "TMPDIR": str(root),
        }
        self.background: list[subprocess.Popen[bytes]] = []

    def run(self, block: Block) -> None:
        if block.directive == "background":
            self._start(block)
            return
        if block.language == "sh":
            command = ["bash", "-e", "-o", "pipefail", "-c", block.text]
        else:
            command = [str(self.work / ".venv" / "bin" / "python"), "-c", block.text]
        done = subprocess.run(
            command,
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
        )
        shown = f"{block.where}\n{block.text}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        if block.directive == "fails":
            assert done.returncode != 0, shown
            assert "Traceback" not in done.stderr, shown
        else:
            assert done.returncode == 0, shown

    def _start(self, block: Block) -> None:
        log = self.work / f"background-{block.line}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                ["bash", "-e", "-c", block.text],
                cwd=self.work,
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.background.append(process)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert process.poll() is None, f"{block.where} stopped:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"{block.where} never served:\n{log.read_text()}"
            try:
                if httpx.get(SERVICE, timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.3)

    def stop(self) -> None:
        for process in self.background:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)

    def check_config(self, block: Block) -> None:
        if block.language == "toml":
            tomllib.loads(block.text)
            return
        data = json.loads(block.text)
        for name, server in data.get("mcpServers", {}).items():
            tools = anyio.run(self._mcp_tools, server)
            assert {"remember", "search_memory", "search_kb", "read_kb"} <= tools, name

    async def _mcp_tools(self, server: dict[str, object]) -> set[str]:
        env = {**self.env, **dict(server.get("env", {}))}  # type: ignore[call-overload]
        params = StdioServerParameters(
            command=str(server["command"]),
            args=[str(a) for a in server.get("args", [])],  # type: ignore[attr-defined]
            env=env,
            cwd=str(self.work),
        )
        with (self.work / "mcp.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(120):
                    await session.initialize()
                    listed = await session.list_tools()
        return {tool.name for tool in listed.tools}


def _set_up_block(block: Block) -> Block:
    """The README's first block without its second line: ``bash .ci/run`` is the test suite,
    the run this test is part of (CI runs exactly that file)."""
    lines = [line.split("#", 1)[0].strip() for line in block.text.splitlines()]
    assert tuple(lines) == SET_UP, block.text
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    return Block(block.path, block.line, block.language, SET_UP[0] + "\n", "background")


@pytest.mark.parametrize("path", DOCS, ids=[path.name for path in DOCS])
def test_every_example_runs_as_written(path: Path, ollama: FakeOllama, tmp_path: Path) -> None:
    blocks = blocks_of(path)
    for block in blocks:
        known = RUN | PARSED | SHOWN
        assert block.language in known, (
            f"{block.where}: a ```{block.language or ''} block is neither run nor checked; "
            f"use one of {sorted(known)}"
        )
        assert block.directive in (None, *DIRECTIVES), block.where
    reader = Reader(tmp_path)
    try:
        for number, block in enumerate(blocks):
            if path.name == "README.md" and number == 0:
                reader.run(_set_up_block(block))
            elif block.language in RUN:
                reader.run(block)
            elif block.language in PARSED:
                reader.check_config(block)
    finally:
        reader.stop()


def test_the_block_reader_finds_blocks_languages_and_directives(tmp_path: Path) -> None:
    sample = tmp_path / "sample.md"
    sample.write_text(
        "# t\n\n<!-- docs: background -->\n```sh\nmemoryd serve\n```\n\n- item\n\n"
        "  ```python\n  print(1)\n  ```\n\n```text\nout\n```\n"
    )
    found = blocks_of(sample)
    assert [(b.language, b.directive, b.text) for b in found] == [
        ("sh", "background", "memoryd serve\n"),
        ("python", None, "print(1)\n"),
        ("text", None, "out\n"),
    ]
    assert found[0].where == "sample.md:4"  # the opening fence


def _help_commands(*group: str) -> set[str]:
    shown = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "memoryd"), *group, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    # The command list ends at the first blank line (the id and exit-code notes follow it).
    listed = shown.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    return {
        line.split()[0] for line in listed.splitlines() if line.startswith("  ") and line.split()
    }


def test_docs_cli_md_names_exactly_the_commands_memoryd_help_lists() -> None:
    table = [
        re.split(r"(?<!\\)\|", line)[1]  # a cell may hold an escaped \|
        for line in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `")
    ]
    documented: set[str] = set()
    for cell in table:
        for usage in re.findall(r"`([^`]+)`", cell):
            words = usage.split()
            documented.add(" ".join(words[:2]) if words[0] in GROUPS else words[0])
    expected = set()
    for command in _help_commands():
        if command in GROUPS:
            expected |= {f"{command} {sub}" for sub in _help_commands(command)}
        else:
            expected.add(command)
    assert sorted(documented ^ expected) == []
