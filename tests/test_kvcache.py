"""The one on-disk cache (``toolmend._kvcache``): namespaces, WAL, corruption recovery, the size
bound, and ``toolmend cache`` reaching every namespace."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from toolmend._errors import ConfigError
from toolmend._kvcache import FILES, KVCache


def test_namespaces_are_separate_and_values_keep_their_type(tmp_path: Path) -> None:
    kv = KVCache(tmp_path / "c.sqlite")
    kv.put("a", "k", "text", model="m1")
    kv.put("b", "k", b"\x00\xff bytes", model="m2")
    assert kv.get("a", "k") == "text" and kv.get("b", "k") == b"\x00\xff bytes"
    assert kv.get("a", "missing") is None
    kv.put_many("a", {"x": "1", "y": "2"}, model="m1")
    assert kv.get_many("a", ["x", "y", "z", "x"]) == {"x": "1", "y": "2"}
    assert kv.namespaces() == ["a", "b"]
    stats = kv.stats()
    assert stats["a"].entries == 3 and stats["a"].models == {"m1": 3} and stats["b"].models == {"m2": 1}
    with sqlite3.connect(kv.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with pytest.raises(ConfigError, match="namespace"):
        kv.put("Bad Name; DROP TABLE a", "k", "v")


def test_clear_by_namespace_by_model_and_all(tmp_path: Path) -> None:
    kv = KVCache(tmp_path / "c.sqlite")
    kv.put_many("a", {"1": "x", "2": "y"}, model="m1")
    kv.put("a", "3", "z", model="m2")
    kv.put("b", "1", "x", model="m1")
    assert kv.clear(model="m1") == 3  # every namespace
    assert kv.stats()["a"].models == {"m2": 1} and kv.stats()["b"].entries == 0
    assert kv.clear("a") == 1
    kv.put("a", "k", "v")
    assert kv.clear() == 1 and not kv.path.exists()
    assert kv.get("a", "k") is None  # reopens a new file


def _garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[:100] = b"\xff" * 100
    path.write_bytes(bytes(data))


def test_a_corrupt_file_is_moved_aside_with_a_warning_and_a_new_one_used(tmp_path: Path) -> None:
    kv = KVCache(tmp_path / "c.sqlite", label="test cache")
    kv.put_many("a", {str(i): "v" * 100 for i in range(50)})
    kv.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{kv.path}{suffix}").unlink(missing_ok=True)
    _garble(kv.path)
    with pytest.raises(ConfigError, match="corrupt"):
        KVCache(kv.path, recover=False).stats()
    with pytest.warns(RuntimeWarning, match="corrupt test cache moved"):
        assert kv.get("a", "1") is None
    kv.put("a", "1", "new")
    assert kv.get("a", "1") == "new"
    assert len(list(tmp_path.glob("c.sqlite.corrupt-*"))) == 1


def test_the_size_bound_evicts_the_oldest_entries_first(tmp_path: Path) -> None:
    kv = KVCache(tmp_path / "c.sqlite", max_bytes=400_000)
    for batch in range(12):
        kv.put_many("a", {f"{batch}-{i}": "x" * 1000 for i in range(128)}, model="m")
    kept = kv.stats()["a"].entries
    assert 0 < kept < 12 * 128
    assert kv.get("a", "0-0") is None  # the first written went first
    assert kv.get("a", "11-127") == "x" * 1000  # the last written stays
    with sqlite3.connect(kv.path) as db:
        pages, free, size = (
            db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "freelist_count", "page_size")
        )
    assert (pages - free) * size <= 400_000 + 128 * 1100  # within one batch of the bound


def test_a_table_of_another_layout_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE embeddings (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash))")
        db.execute("INSERT INTO embeddings VALUES ('m', 'h', x'00')")
    db.close()
    kv = KVCache(path)
    assert kv.get("embeddings", "h") is None
    kv.put("embeddings", "h", b"\x01", model="m")
    assert kv.get("embeddings", "h") == b"\x01"


def test_threads_share_one_cache(tmp_path: Path) -> None:
    kv = KVCache(tmp_path / "c.sqlite")

    def write(n: int) -> None:
        for i in range(50):
            kv.put("a", f"{n}-{i}", str(i), model=f"t{n}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert kv.stats()["a"].entries == 200


def _app() -> typer.Typer:
    from toolmend.cli._cache import register

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """root"""

    register(app)
    return app


def test_cache_stats_and_clear_cover_every_namespace(tmp_path: Path) -> None:
    from toolmend.models import Completion, ResponseCache
    from toolmend.strategies._hitec import ChecklistCache

    ResponseCache(tmp_path).put("r", Completion(text="a"), model="openai/m")
    KVCache(tmp_path / FILES["embeddings"]).put("embeddings", "e", b"\x00" * 16, model="openai/m")
    checklists = ChecklistCache(tmp_path / FILES["checklists"])
    checklists.put("schema-1", "openai/m", "- check the unit")
    checklists.put("schema-2", "openai/w", "- check the date")
    out = CliRunner().invoke(_app(), ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "embeddings:" in out.output and "1 entries" in out.output
    assert "checklists:" in out.output and "2 entries" in out.output
    assert "openai/w" in out.output
    out = CliRunner().invoke(
        _app(), ["cache", "clear", "--cache-dir", str(tmp_path), "--model", "openai/m", "-y"]
    )
    assert out.exit_code == 0 and "deleted 3 entries" in out.output, out.output
    assert checklists.get("schema-2", "openai/w") == "- check the date"
    assert checklists.get("schema-1", "openai/m") is None
    out = CliRunner().invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path), "-y"])
    assert out.exit_code == 0 and "deleted 1 entries" in out.output, out.output
    assert list(tmp_path.iterdir()) == []
