"""Every ``>>>`` example in ``src/toolmend`` runs and holds (docstrings that lie fail here).

Each module's examples run in a fresh temporary folder (``tmp_path`` is in their namespace), with
the shared data where ``TOOLMEND_SHARED`` points and a private cache.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import toolmend

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules() -> list[str]:
    names = ["toolmend"]
    for info in pkgutil.walk_packages(toolmend.__path__, "toolmend."):
        if info.name.endswith("__main__"):
            continue  # running it is the CLI
        names.append(info.name)
    return sorted(names)


def _has_examples(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    return ">>>" in Path(spec.origin).read_text(encoding="utf-8")


MODULES = [n for n in _modules() if _has_examples(n)]


def test_the_examples_are_found() -> None:
    # A guard on the discovery itself: most modules have examples, and every package is walked.
    assert len(MODULES) > 60 and "toolmend.bench" in MODULES and "toolmend.formats.calls" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_cache_dir: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    tests = finder.find(module, name, globs={**vars(module), "tmp_path": tmp_path})
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name} has no examples that run"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (see above)"
