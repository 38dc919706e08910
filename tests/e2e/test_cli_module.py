"""``python -m memoryd.cli`` runs the same command line as the ``memoryd`` script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_python_dash_m_memoryd_cli_prints_the_same_help(tmp_path: Path) -> None:
    env = {**os.environ, "MEMORYD_HOME": str(tmp_path)}
    as_module = subprocess.run(
        [sys.executable, "-m", "memoryd.cli", "--help"],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    as_script = subprocess.run(
        [str(Path(sys.executable).with_name("memoryd")), "--help"],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    assert as_module.returncode == 0, as_module.stderr
    assert as_module.stdout == as_script.stdout
    assert "kb" in as_module.stdout and "migrate-store" in as_module.stdout
