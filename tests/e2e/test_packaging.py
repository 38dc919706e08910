"""memoryd as a user installs it (``pipx install .``, ``uv tool install .``, ``pip install .``):
a built wheel that carries every file the package reads at run time, and that works from
outside the clone: prompts found, the local model loaded from its dependency, a store
created, a memory remembered and recalled."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "memoryd"


def _build_wheel(out: Path) -> Path:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = out.glob("memoryd-*.whl")
    return wheel


def test_the_wheel_carries_every_file_and_runs_outside_the_clone(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path / "dist")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    needed = {
        "memoryd/" + path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert sorted(needed - shipped) == []

    target = tmp_path / "installed"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target),
         str(wheel)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = """
import memoryd, sys
from pathlib import Path
assert Path(memoryd.__file__).is_relative_to(sys.argv[1]), memoryd.__file__
from memoryd.cli import main
from memoryd.extraction.extractor import load_prompt
for name in ("extract", "compaction", "mission", "reflect", "merge"):
    assert load_prompt(name).text
main(["init"], standalone_mode=False)
main(["remember", "The owner's kayak is yellow"], standalone_mode=False)
main(["recall", "what colour is the kayak"], standalone_mode=False)
"""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(target),
        "MEMORYD_HOME": str(tmp_path / "home"),
    }
    ran = subprocess.run(
        [sys.executable, "-c", script, str(target)],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "yellow" in ran.stdout
