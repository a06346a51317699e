"""The examples in the serve modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "toolmend.serve",
    "toolmend.serve._app",
    "toolmend.serve._assembler",
    "toolmend.serve._budget",
    "toolmend.serve._metrics",
    "toolmend.serve._protocol",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert attempted > 0, f"{name} has no examples"
    assert failed == 0
