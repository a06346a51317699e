from __future__ import annotations

from pathlib import Path

import pytest

from toolmend._shared import cache_dir, shared_dir


def test_shared_dir_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLMEND_SHARED", str(tmp_path))
    assert shared_dir() == tmp_path


def test_shared_dir_found_beside_the_checkout_from_anywhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TOOLMEND_SHARED", raising=False)
    monkeypatch.chdir(tmp_path)
    checkout = Path(__file__).resolve().parents[1]
    if (checkout.parent / "shared").is_dir():
        assert shared_dir() == checkout.parent / "shared"


def test_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLMEND_CACHE_DIR", str(tmp_path))
    assert cache_dir() == tmp_path
