"""``toolmend cache stats|clear`` (src/toolmend/cli/cache.py)."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from toolmend.cli._cache import register
from toolmend.models import Completion, ResponseCache


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """root"""

    register(app)
    return app


def test_stats_and_clear(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("k1", Completion(text="a"), model="openai/a")
    cache.put("k2", Completion(text="b"), model="openai/b")
    cache.put("k3", Completion(text="c"), model="openai/b")
    runner = CliRunner()
    out = runner.invoke(_app(), ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "entries: 3" in out.output and "openai/b" in out.output
    out = runner.invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path), "--model", "openai/b", "-y"])
    assert out.exit_code == 0 and "deleted 2 entries" in out.output
    out = runner.invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path)], input="n\n")
    assert out.exit_code == 1
    assert ResponseCache(tmp_path).stats().entries == 1
    out = runner.invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path)], input="y\n")
    assert out.exit_code == 0 and ResponseCache(tmp_path).stats().entries == 0


def test_stats_uses_the_environment_default(_private_cache_dir: Path) -> None:
    out = CliRunner().invoke(_app(), ["cache", "stats"])
    assert out.exit_code == 0 and str(_private_cache_dir) in out.output.replace("\n", "")
    assert "entries: 0" in out.output


def test_the_embeddings_file_name_matches_the_embedder() -> None:
    from toolmend.cli import _cache as cache_cli
    from toolmend.compare._embed import DEFAULT_CACHE_FILE

    assert cache_cli._EMBEDDINGS == DEFAULT_CACHE_FILE


def test_stats_and_clear_cover_the_whole_folder(tmp_path: Path) -> None:
    ResponseCache(tmp_path).put("k", Completion(text="a"), model="m")
    (tmp_path / "embeddings.sqlite").write_bytes(b"x" * 2048)
    (tmp_path / "suites" / "critic" / "seed-0").mkdir(parents=True)
    (tmp_path / "suites" / "critic" / "seed-0" / "data.jsonl").write_bytes(b"y" * 4096)
    runner = CliRunner()
    out = runner.invoke(_app(), ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "entries: 1" in out.output and "embeddings: 2.0 KiB" in out.output
    assert "suites: 4.0 KiB" in out.output
    out = runner.invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path), "-y"])
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _corrupt(root: Path) -> Path:
    cache = ResponseCache(root)
    for i in range(50):
        cache.put(f"k{i}", Completion(text="answer " * 50), model="m")
    cache.close()
    path = root / "responses.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    data = bytearray(path.read_bytes())
    data[:100] = b"\xff" * 100  # the header: "file is not a database"
    path.write_bytes(bytes(data))
    return path


def test_a_corrupt_cache_is_one_line_under_stats_and_clear_removes_it(tmp_path: Path) -> None:
    path = _corrupt(tmp_path)
    runner = CliRunner()
    out = runner.invoke(_app(), ["cache", "stats", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 2 and "corrupt" in out.output and "Traceback" not in out.output
    assert len(out.output.strip().splitlines()) == 1
    out = runner.invoke(_app(), ["cache", "clear", "--cache-dir", str(tmp_path), "-y"])
    assert out.exit_code == 0, out.output
    assert not path.exists()
    assert ResponseCache(tmp_path).stats().entries == 0


def test_a_directory_in_place_of_the_cache_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "responses.sqlite").mkdir()
    for args in (["stats"], ["clear", "-y"]):
        out = CliRunner().invoke(_app(), ["cache", *args, "--cache-dir", str(tmp_path)])
        assert out.exit_code == 2 and "is a directory" in out.output, out.output
        assert len(out.output.strip().splitlines()) == 1


def test_a_corrupt_cache_is_moved_aside_and_a_new_one_used(tmp_path: Path) -> None:
    import pytest

    _corrupt(tmp_path)
    cache = ResponseCache(tmp_path)
    with pytest.warns(RuntimeWarning, match="corrupt response cache moved"):
        assert cache.get("k1") is None
    assert cache.put("k1", Completion(text="new"), model="m")
    assert cache.get("k1") is not None and cache.get("k1").text == "new"  # type: ignore[union-attr]
    assert [p.name.startswith("responses.sqlite.corrupt-") for p in tmp_path.iterdir()].count(True) == 1


def test_a_cache_deleted_mid_run_keeps_later_writes(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("a", Completion(text="1"), model="m")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{cache.path}{suffix}").unlink(missing_ok=True)
    cache.put("b", Completion(text="2"), model="m")
    assert ResponseCache(tmp_path).get("b") is not None  # another process sees it on disk
