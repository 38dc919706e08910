"""``python -m memoryd.cli``: the same command line as the ``memoryd`` script."""

from __future__ import annotations

from memoryd.cli import main

if __name__ == "__main__":  # pragma: no cover
    main(prog_name="memoryd")
