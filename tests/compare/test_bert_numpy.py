"""The numpy MiniLM against sentence-transformers on the same bundled weights, and the main job
without torch.

The numpy forward pass (toolmend.compare._bert) is what the main job runs; sentence-transformers
is the reference. Texts cover what the scorers embed: short phrases, JSON arguments, non-ASCII,
an empty string, and a text longer than the 256-token window (truncation), in batches that mix
lengths (padding).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from toolmend.compare._bert import BertEncoder, default_model_dir
from toolmend.compare._embed import Embedder

TEXTS = [
    "book a flight to Paris",
    "reserve a plane ticket to Paris",
    "",
    "city " * 400,
    "Ünïcödé — 中文文本, emoji 🎉 and tabs\tand\nnewlines",
    '{"name": "get_weather", "arguments": {"city": "Berlin", "unit": "celsius"}}',
    "The tool call is wrong: the parameter `date` must be YYYY-MM-DD, got 'tomorrow'.",
    "a",
]


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_numpy_forward_pass_matches_sentence_transformers_to_1e_6() -> None:
    st = pytest.importorskip("sentence_transformers", reason="the reference needs the embed/train extra")
    folder = default_model_dir()
    assert BertEncoder.supports(folder)
    reference = st.SentenceTransformer(str(folder), device="cpu", local_files_only=True).encode(
        TEXTS, batch_size=3, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
    )
    ours = _unit(BertEncoder(folder).encode(TEXTS, batch_size=3))
    assert ours.shape == reference.shape == (len(TEXTS), 384)
    assert np.abs(ours - reference).max() < 1e-6
    # The Embedder (what every scorer calls) takes the numpy path for the default model.
    embedder = Embedder(cache_path=False)
    assert np.abs(embedder.encode(TEXTS) - reference).max() < 1e-6
    assert isinstance(embedder._model, BertEncoder)


def test_batching_does_not_change_a_vector() -> None:
    encoder = BertEncoder(default_model_dir())
    alone = np.stack([encoder.encode([t])[0] for t in TEXTS])
    together = encoder.encode(TEXTS, batch_size=len(TEXTS))
    assert np.abs(_unit(alone) - _unit(together)).max() < 1e-6


def test_other_architectures_are_not_claimed(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "mpnet"}')
    assert not BertEncoder.supports(tmp_path)
    assert not BertEncoder.supports(tmp_path / "missing")


def test_embedding_never_imports_torch(tmp_path: Path) -> None:
    """A fresh interpreter embeds with an empty cache and leaves torch and sentence-transformers
    unimported (the light install has neither)."""
    code = (
        "import sys\n"
        "from toolmend.compare._embed import Embedder\n"
        "v = Embedder().encode(['book a flight', 'reserve a ticket'])\n"
        "assert v.shape == (2, 384), v.shape\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)\n"
        "print('heavy:', heavy)\n"
    )
    env = {**os.environ, "TOOLMEND_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "heavy: []" in done.stdout
