#!/usr/bin/env python3
"""Move memoryd's top-level modules into packages by domain, and rewrite every reference.

Usage (from the repository root, on a clean tree)::

    python scripts/relayout.py            # move, rewrite, tidy imports; prints what it did
    python scripts/relayout.py --dry-run  # print the plan, change nothing
    python scripts/relayout.py --map      # print the move map (old -> new) as a table

What it does, in order:

1. Turns every relative import under ``src/memoryd`` into an absolute one (a module that
   moves cannot break an absolute import of it, and its own imports keep meaning the same).
2. ``git mv`` for each move whose source still exists (so ``git log --follow`` works), and
   writes each new package's ``__init__.py`` (a docstring saying what the package holds).
3. Rewrites every reference in ``src/``, ``tests/``, ``bench/``, ``scripts/``, ``docs/``, the
   README, SECURITY.md and ``pyproject.toml``: ``from memoryd.x import``, ``import memoryd.x``,
   ``from memoryd import x``, dotted strings (``monkeypatch.setattr("memoryd.x.f", ...)``,
   ``mock.patch``, ``importlib.resources.files``, logger names, ``python -m memoryd.x``),
   source paths (``src/memoryd/x.py``) and package-data globs (``prompts/*.md``).
4. Sorts the imports and formats the files it changed (``ruff check --select I --fix``,
   ``ruff format``).

It is idempotent: a move whose destination exists and source does not is skipped, and a
dotted name already pointing into the new layout is left alone, so a second run changes
nothing. Modules at the top of ``src/memoryd`` that the map does not know are reported (and
not moved): add them to ``MOVES`` or ``KEEP``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import textwrap
import tokenize
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "memoryd"

# old path -> new path, both relative to src/memoryd. A trailing "/" marks a folder.
MOVES: dict[str, str] = {
    # memory/: the memory model, its writes and review, the promotion rules
    "model.py": "memory/model.py",
    "ledger.py": "memory/ledger.py",
    "writes.py": "memory/writes.py",
    "review.py": "memory/review.py",
    "promotion.py": "memory/promotion_policy.py",
    "proposals.py": "memory/proposal_policy.py",
    "slots.py": "memory/slot_policy.py",
    "slot_vocabulary.py": "memory/slot_vocabulary.py",
    "entities.py": "memory/entity_policy.py",
    "forget.py": "memory/forget_policy.py",
    "forgetting.py": "memory/forget.py",
    # recall/: read the message, run the legs, score and gate, pack
    "timewindow.py": "recall/time_window_policy.py",
    "query_bounds.py": "recall/bounds_policy.py",
    "legs.py": "recall/legs.py",
    # recall/evidence.py since split by stage: gathering is recall/legs.py's run_legs.
    "retrieval.py": "recall/score.py",
    "recall.py": "recall/policy.py",
    "relevance.py": "recall/relevance_policy.py",
    "retriever.py": "recall/run.py",
    "context_pack.py": "recall/context_policy.py",
    "context.py": "recall/context.py",
    # extraction/: the model proposes memories from conversation
    "extraction.py": "extraction/extractor.py",
    "extraction_queue.py": "extraction/queue.py",
    "chat_imports.py": "extraction/chat_export_policy.py",
    "chat_importer.py": "extraction/chat_import.py",
    "prompts/": "extraction/prompts/",
    # consolidation/: the daily run
    "consolidation.py": "consolidation/policy.py",
    "consolidation_run.py": "consolidation/run.py",
    "schedule.py": "consolidation/schedule_policy.py",
    # jobs/: background work, its records and retry policy, store-wide leases
    "jobs.py": "jobs/model.py",
    "background.py": "jobs/worker.py",
    "lease.py": "jobs/lease.py",
    # evaluation/: the owner's evaluation set
    "evalset.py": "evaluation/policy.py",
    "eval_runner.py": "evaluation/run.py",
    "eval_space.py": "evaluation/candidate_view.py",
    # trust/: fences, taint, credential screening (all pure)
    "fence.py": "trust/fence.py",
    "taint.py": "trust/taint.py",
    "screening.py": "trust/credential_screening.py",
    # providers/: models and endpoints
    "llm.py": "providers/llm.py",
    "embedding.py": "providers/embedder.py",
    "embed_remote.py": "providers/remote_embedder.py",
    "endpoint_calls.py": "providers/endpoint_calls.py",
    "tokens.py": "providers/tokenizer.py",
    # ops/: the store as a whole, for the owner
    "backup.py": "ops/backup.py",
    "portability.py": "ops/portability.py",
    "reembed.py": "ops/reembed.py",
    "doctor.py": "ops/doctor.py",
    "status_report.py": "ops/status.py",
    "store_admin.py": "ops/store_admin.py",
    "server_record.py": "ops/server_record.py",
    # config/
    "settings.py": "config/settings.py",
    "settings_file.py": "config/settings_file.py",
    # storage/
    "full_disk.py": "storage/full_disk.py",
    # mcp/ (a surface, like cli/ and http/)
    "mcp_server.py": "mcp/server.py",
    # top level, renamed for what they are
    "app.py": "wiring.py",
    "textutil.py": "words.py",
    # kb/pdf/: the PDF reader and what only it uses
    "kb/pdf.py": "kb/pdf/reader.py",
    "kb/layout.py": "kb/pdf/layout.py",
    "kb/pages.py": "kb/pdf/pages.py",
    "kb/picture_reads.py": "kb/pdf/picture_reads.py",
}

# Modules that stay at the top of src/memoryd (with the packages, at most ~15).
KEEP = {
    "__init__.py",
    "py.typed",
    "errors.py",
    "service.py",
    "forward.py",
    "client.py",
    "results.py",
    "json_shapes.py",
    "clock.py",
    "ids.py",
    "tools.py",
    "proxy",
}

PACKAGE_DOCS: dict[str, str] = {
    "memory": "Memories: the model, the ledger that alone changes a status, writes, the owner's "
    "review, and the promotion, slot, entity and forget rules (the ``*_policy`` modules, pure).",
    "recall": "Recall as a pipeline: read the message (``bounds_policy``, "
    "``time_window_policy``), run the legs (``legs``), score and gate (``evidence``, "
    "``policy``), pack (``policy``, ``context_policy``); ``run`` and ``context`` do the I/O.",
    "extraction": "Extraction: the model reads conversation and proposes memories "
    "(``extractor``, ``queue``, the versioned ``prompts``), and imported chat histories "
    "(``chat_export_policy`` reads an export, pure; ``chat_import`` queues it).",
    "consolidation": "The daily consolidation: ``policy`` and ``schedule_policy`` decide "
    "(pure), ``run`` applies.",
    "jobs": "Background work: job records and retry policy (``model``), the worker "
    "(``worker``), store-wide leases (``lease``).",
    "evaluation": "The owner's evaluation set: ``policy`` (pure: cases, verdicts, scores), "
    "``run`` (against the store), ``candidate_view`` (a candidate embedder's view of it).",
    "trust": "What keeps untrusted text in its place, all pure: fences, per-session taint, "
    "credential and sensitive-word screening.",
    "providers": "Models and endpoints: the LLM routes, the embedders (local and remote), the "
    "tokenizer, and bounded calls to model endpoints.",
    "ops": "The store as a whole, for the owner: backup, export and import, re-embedding, "
    "doctor, status, the running server's record.",
    "config": "Settings, resolved once from the command line, the environment and "
    "``memoryd.toml``; editing ``memoryd.toml``.",
    "mcp": "``memoryd mcp``: the model's tools over the Model Context Protocol.",
    "kb/pdf": "PDF to Markdown: the reader (``reader``), the page data it hands on "
    "(``pages``), the layout that turns pages into structure (``layout``, pure), and the "
    "pictures read beside it (``picture_reads``).",
}

# Files that quote old names on purpose (the script's own test cases).
# Files that name the old modules on purpose: this script's test, and the bench shim that lets
# a pre-layout checkout answer to today's module paths.
KEEP_AS_WRITTEN = {"tests/unit/test_relayout_script.py", "bench/moved_modules.py"}

# Files whose text is rewritten (relative to the repository root).
REWRITE_ROOTS = ("src", "tests", "bench", "scripts", "docs")
REWRITE_FILES = ("README.md", "SECURITY.md", "pyproject.toml")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".sh", ".cfg", ".ini", ".html", ".json"}

DOTTED = re.compile(r"(?<![\w.])memoryd(?:\.[A-Za-z_]\w*)+")
FROM_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)from (?P<base>memoryd(?:\.\w+)*) import (?P<name>\w+)"
    r"(?: as (?P<alias>\w+))?(?P<rest>[ \t]*(?:#.*)?)$",
    re.MULTILINE,
)
FROM_IMPORT_ANY = re.compile(r"^[ \t]*from (memoryd(?:\.\w+)*) import \(?([^)]*?)\)?$", re.M | re.S)
RELATIVE = re.compile(r"^(?P<indent>[ \t]*)from (?P<dots>\.+)(?P<module>[\w.]*) import ", re.M)
BARE_NAME = re.compile(r"`([A-Za-z_]\w*\.py)`")
SOURCE_PATH = re.compile(r"(?<![\w.-])memoryd/((?:[A-Za-z_]\w*/)*[A-Za-z_]\w*)(\.py\b|/)")


@dataclass(frozen=True)
class Move:
    old: str
    new: str

    @property
    def is_folder(self) -> bool:
        return self.old.endswith("/")


def dotted(path: str) -> str:
    """``recall/policy.py`` -> ``memoryd.recall.policy``; ``prompts/`` -> ``memoryd.prompts``."""
    stem = path.rstrip("/").removesuffix(".py").removesuffix("/__init__")
    return "memoryd." + stem.replace("/", ".")


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True)
    return done.stdout


def current_modules() -> set[str]:
    """Every module and package under src/memoryd as it stands (dotted names)."""
    found = {"memoryd"}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        found.add(dotted(rel))
    for path in PACKAGE.rglob("*"):
        if path.is_dir() and (path / "__init__.py").exists():
            found.add(dotted(path.relative_to(PACKAGE).as_posix() + "/"))
    return found


def old_to_new() -> dict[str, str]:
    return {dotted(old): dotted(new) for old, new in MOVES.items()}


# --- step 1: relative imports become absolute ------------------------------------------


def absolutize(path: Path) -> bool:
    """Rewrite ``from .x import y`` in ``path`` (under src/memoryd) to ``from memoryd.… import``."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    package = list(rel.parts)[:-1]  # a module's package; for __init__, the package itself
    text = path.read_text(encoding="utf-8")

    def absolute(match: re.Match[str]) -> str:
        level = len(match["dots"])
        anchor = package[: len(package) - (level - 1)]
        base = ".".join([*anchor, match["module"]] if match["module"] else anchor)
        return f"{match['indent']}from {base} import "

    new = RELATIVE.sub(absolute, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
        return True
    return False


# --- step 2: the moves -------------------------------------------------------------------


def plan() -> tuple[list[Move], list[str], list[str]]:
    """The moves still to make, the ones already made, and the problems (nothing guessed)."""
    todo: list[Move] = []
    done: list[str] = []
    problems: list[str] = []
    for old, new in MOVES.items():
        source, target = PACKAGE / old, PACKAGE / new
        # A moved module later split into a package of its name keeps its import path.
        split = new.endswith(".py") and (target.with_suffix("") / "__init__.py").exists()
        target_is_there = target.exists() or split
        if source.exists():
            if source.is_dir() != old.endswith("/"):
                problems.append(f"{old}: expected a {'folder' if old.endswith('/') else 'file'}")
            elif target_is_there and target.resolve() != source.resolve():
                problems.append(f"{old} -> {new}: both exist; merge them by hand")
            else:
                todo.append(Move(old, new))
        elif target_is_there:
            done.append(old)
        else:
            problems.append(f"{old}: neither it nor {new} exists (renamed upstream?)")
    return todo, done, problems


def unknown_modules() -> list[str]:
    """Top-level modules and packages of src/memoryd the map does not place."""
    known = set(KEEP) | {old.rstrip("/") for old in MOVES if "/" not in old.rstrip("/")}
    known |= {new for new in MOVES.values() if "/" not in new}
    packages = {new.split("/")[0] for new in MOVES.values() if "/" in new}
    packages |= {"cli", "http", "kb", "storage", "__pycache__"}
    return sorted(
        path.name
        for path in PACKAGE.iterdir()
        if path.name not in known
        and path.name not in packages
        and (path.suffix == ".py" or path.is_dir())
        and not path.name.endswith(".egg-info")
    )


def make_moves(moves: list[Move]) -> None:
    # A file that becomes a folder of the same name (kb/pdf.py -> kb/pdf/reader.py,
    # recall.py -> recall/policy.py) steps aside first.
    parked: dict[str, str] = {}
    moving = {move.old for move in moves}
    for move in moves:
        for parent in Path(move.new).parents:
            clash = PACKAGE / f"{parent.as_posix()}.py"
            key = f"{parent.as_posix()}.py"
            parking = parent.as_posix() != "." and clash.is_file() and key in moving
            if parking and key not in parked:
                aside = f"{parent.as_posix()}__relayout_aside.py"
                git("mv", str(PACKAGE / key), str(PACKAGE / aside))
                parked[key] = aside
    for move in moves:
        source = PACKAGE / parked.get(move.old, move.old.rstrip("/"))
        target = PACKAGE / move.new.rstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        git("mv", str(source), str(target))
    for folder, doc in PACKAGE_DOCS.items():
        init = PACKAGE / folder / "__init__.py"
        if (PACKAGE / folder).is_dir() and not init.exists():
            lines = textwrap.wrap(f'"""{doc}"""', width=100, break_on_hyphens=False)
            init.write_text("\n".join(lines) + "\n", encoding="utf-8")
            git("add", str(init))


# --- step 3: references --------------------------------------------------------------------


def files_to_rewrite() -> list[Path]:
    tracked = git("ls-files", "-z", *REWRITE_ROOTS, *REWRITE_FILES).split("\0")
    paths = [ROOT / name for name in tracked if name]
    return [
        path
        for path in paths
        if path.is_file()
        and (path.suffix in TEXT_SUFFIXES or path.name == "pyproject.toml")
        and path.resolve() != Path(__file__).resolve()
        and path.relative_to(ROOT).as_posix() not in KEEP_AS_WRITTEN
    ]


class Rewriter:
    """Rewrites old dotted names and paths to new ones, leaving new ones alone."""

    def __init__(self, mapping: dict[str, str], modules: set[str]) -> None:
        self.mapping = mapping
        self.modules = modules
        self.path_moves = {old.rstrip("/"): new.rstrip("/") for old, new in MOVES.items()}

    def name(self, name: str) -> str:
        """The new spelling of ``name`` (a module, or an attribute under one)."""
        parts = name.split(".")
        prefixes = [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
        in_new = next((len(p) for p in prefixes if p in self.modules), 0)
        old = next((p for p in prefixes if p in self.mapping), None)
        if old is None or len(old) < in_new:
            return name
        if len(old) == in_new and old in self.modules and old not in self._became_package():
            return name  # the old name is a module of the new tree too (not moved away)
        return self.mapping[old] + name[len(old) :]

    def _became_package(self) -> set[str]:
        return {old for old, new in self.mapping.items() if new.startswith(old + ".")}

    def text(self, text: str, *, is_pyproject: bool = False, is_prose: bool = False) -> str:
        text = FROM_IMPORT.sub(self._from_import, text)
        text = DOTTED.sub(self._dotted, text)
        text = SOURCE_PATH.sub(self._path, text)
        if is_prose:
            text = BARE_NAME.sub(self._bare_name, text)
        if is_pyproject:
            for old, new in MOVES.items():
                if old.endswith("/"):
                    text = text.replace(f'"{old}', f'"{new}')
        return text

    def _from_import(self, match: re.Match[str]) -> str:
        """``from memoryd import eval_space`` -> ``from memoryd.evaluation import candidate_view as
        eval_space``: the imported name is itself a moved module."""
        full = f"{match['base']}.{match['name']}"
        if full not in self.mapping or (
            full in self.modules and full not in self._became_package()
        ):
            return match[0]
        parent, _, leaf = self.mapping[full].rpartition(".")
        alias = match["alias"] or match["name"]
        tail = "" if alias == leaf else f" as {alias}"
        return f"{match['indent']}from {parent} import {leaf}{tail}{match['rest']}"

    def _dotted(self, match: re.Match[str]) -> str:
        name = match[0]
        following = match.string[match.end() : match.end() + 200]
        imported = re.match(r"\s+import\s+\(?\s*(\w+)", following)
        if imported and f"{name}.{imported[1]}" in self.modules:
            return name  # ``from memoryd.recall import legs``: already the new layout
        return self.name(name)

    def _path(self, match: re.Match[str]) -> str:
        rel, tail = match[1], match[2]
        old = rel + (".py" if tail == ".py" else "")
        if (PACKAGE / old).exists():
            return match[0]
        new = self.path_moves.get(old)
        if new is None:
            return match[0]
        return f"memoryd/{new}" + ("" if tail == ".py" else "/")

    def _bare_name(self, match: re.Match[str]) -> str:
        """`` `retriever.py` `` in Markdown named a top-level module: `` `recall/run.py` `` now."""
        name = match[1]
        if name not in self.path_moves or (PACKAGE / name).exists():
            return match[0]
        return f"`{self.path_moves[name]}`"


def leftover_multi_imports(text: str, mapping: dict[str, str], modules: set[str]) -> list[str]:
    """``from memoryd import (a, b)`` naming a moved module: reported, fixed by hand."""
    found = []
    for match in FROM_IMPORT_ANY.finditer(text):
        for name in re.findall(r"\w+", match[2]):
            full = f"{match[1]}.{name}"
            if full in mapping and full not in modules:
                found.append(full)
    return found


def wrap_lengthened(old: str, new: str) -> str:
    """Break docstring and comment lines the rewrite pushed over 100 characters (code lines are
    left to ``ruff format``)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if len(old_lines) != len(new_lines):
        return new
    prose: set[int] = set()
    try:
        for token in tokenize.generate_tokens(StringIO(new).readline):
            if token.type == tokenize.COMMENT and token.line.lstrip().startswith("#"):
                prose.add(token.start[0] - 1)
            elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
                prose.update(range(token.start[0] - 1, token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return new
    out: list[str] = []
    for number, (before, line) in enumerate(zip(old_lines, new_lines, strict=True)):
        if len(line) <= 100 or line == before or number not in prose:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        stripped = line.lstrip()
        marker = next((m for m in ("# ", "-- ") if stripped.startswith(m)), "")
        if stripped.startswith('"""') or stripped.startswith('r"""'):
            marker = ""
        prefix = indent + marker
        while len(line) > 100:
            cut = line.rfind(" ", len(prefix) + 1, 101)
            if cut <= len(prefix):
                break
            out.append(line[:cut].rstrip())
            line = prefix + line[cut + 1 :]
        out.append(line)
    return "\n".join(out) + ("\n" if new.endswith("\n") else "")


# --- step 4 --------------------------------------------------------------------------------


def ruff(paths: list[Path]) -> None:
    python_files = [str(path) for path in paths if path.suffix == ".py" and path.exists()]
    if not python_files:
        return
    local = ROOT / ".venv" / "bin" / "ruff"
    exe = str(local) if local.exists() else shutil.which("ruff")
    if exe is None:
        print("ruff not found: sort imports and format the changed files by hand")
        return
    # Quiet: what is left after formatting is reported once, at the end.
    checks = (
        ["--select", "I", "--fix"],
        # A "noqa: F401" import that sorting moved off its block's last line keeps its reason.
        ["--select", "F401", "--add-noqa"],
        ["--extend-select", "RUF100", "--fix"],
    )
    for options in checks:
        subprocess.run([exe, "check", *options, *python_files], cwd=ROOT, capture_output=True)
    subprocess.run([exe, "format", "-q", *python_files], cwd=ROOT, check=True)


def lint_left(paths: list[Path]) -> list[str]:
    """What ruff still reports in the rewritten files (a prose line too long to wrap, say)."""
    local = ROOT / ".venv" / "bin" / "ruff"
    exe = str(local) if local.exists() else shutil.which("ruff")
    if exe is None or not paths:
        return []
    done = subprocess.run(
        [exe, "check", "--output-format", "concise", "-q", *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return [line for line in done.stdout.splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    parser.add_argument("--map", action="store_true", help="print the move map and stop")
    parser.add_argument("--no-ruff", action="store_true", help="do not sort or format")
    args = parser.parse_args()

    if args.map:
        for old, new in MOVES.items():
            print(f"src/memoryd/{old:<24} -> src/memoryd/{new}")
        return 0

    todo, done, problems = plan()
    unknown = unknown_modules()
    print(f"moves to make: {len(todo)}; already made: {len(done)}")
    for problem in problems:
        print(f"  problem: {problem}")
    for name in unknown:
        print(f"  not in the map (left where it is): src/memoryd/{name}")
    if args.dry_run:
        for move in todo:
            print(f"  git mv src/memoryd/{move.old} src/memoryd/{move.new}")
        return 1 if problems else 0
    if problems:
        print("stopping: fix the problems above first (nothing was changed)")
        return 1

    for path in sorted(PACKAGE.rglob("*.py")):
        absolutize(path)
    make_moves(todo)

    mapping = old_to_new()
    rewriter = Rewriter(mapping, current_modules())
    by_hand: list[str] = []
    for path in files_to_rewrite():
        text = path.read_text(encoding="utf-8")
        new = rewriter.text(
            text, is_pyproject=path.name == "pyproject.toml", is_prose=path.suffix == ".md"
        )
        by_hand += [
            f"{path.relative_to(ROOT)}: {name}"
            for name in leftover_multi_imports(new, mapping, rewriter.modules)
        ]
        if new != text:
            if path.suffix == ".py":
                new = wrap_lengthened(text, new)
            path.write_text(new, encoding="utf-8")
    # Sorting and formatting every tracked file is safe: the tree was clean before.
    changed = [path for path in files_to_rewrite() if path.suffix == ".py"]
    if not args.no_ruff:
        ruff(changed)
    diff = git("status", "--porcelain", *REWRITE_ROOTS, *REWRITE_FILES).splitlines()
    print(f"files changed or moved: {len(diff)}")
    for line in by_hand:
        print(f"  fix by hand (a moved module in a multi-name import): {line}")
    left = lint_left(changed) if not args.no_ruff else []
    for place in left:
        print(f"  ruff still reports (fix by hand): {place}")
    print(
        "  docs/architecture.md's Layout block names modules by file name: redraw it by hand "
        "(tests/unit/test_module_layout.py checks it)"
    )
    return 1 if by_hand or left else 0


if __name__ == "__main__":
    sys.exit(main())
