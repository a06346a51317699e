"""A script of the repository (``benchmarks/``, ``scripts/``, a test server) imported as a module.

Those folders are not packages and not on ``sys.path``; the module is registered under ``name``
(its dataclasses and pickles look it up there) and loaded once.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def repo_module(path: str, name: str | None = None) -> ModuleType:
    """``path`` (relative to the repository root) as the module ``name`` (its stem by default)."""
    file = ROOT / path
    name = name or file.stem
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, file)
        assert spec is not None and spec.loader is not None, file
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]
