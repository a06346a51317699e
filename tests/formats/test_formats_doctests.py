"""The usage examples in the formats modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "toolmend.formats",
    "toolmend.formats.calls",
    "toolmend.formats.jsonfmt",
    "toolmend.formats.lenient",
    "toolmend.formats.nestools",
    "toolmend.formats.openai",
    "toolmend.formats.python_calls",
    "toolmend.formats.result",
    "toolmend.formats.tags",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0, f"{name} has no examples"
    assert failed == 0
