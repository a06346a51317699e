"""Folders that outlive a pytest session, for work a later session (or another xdist worker) can
reuse instead of redoing: a real model's converted weights, mypy's incremental cache. Each is
validated by its user (a folder keyed by the content it was made from; mypy's own checks), so a
stale one is never trusted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def kept_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """``name`` beside pytest's numbered session folders (``pytest-of-<user>/``), created if absent.

    pytest prunes its old ``pytest-N`` folders but leaves other names there. An xdist worker's base
    folder is one level deeper (``pytest-N/popen-gwK``) than a plain session's (``pytest-N``), so
    every worker of every session lands on the same folder.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base.parent / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
