"""A griffe extension for the API reference: toolmend's docstrings are reStructuredText-flavoured
(``code``, :class:`~pkg.Name` roles, bare ``>>>`` doctests), and mkdocstrings renders Markdown.

Bare doctest runs are fenced as ``pycon`` (else ``[...]`` output lines read as Markdown link
references), and roles become inline code naming the object. The docstrings themselves stay as
they are: the doctests run from them (tests/test_doctests.py).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj|const|py:\w+):`~?([^`]+)`")
PROMPT = re.compile(r"^(\s*)>>> ")


def markdown(text: str) -> str:
    """``text`` with its roles made code spans and its doctest runs fenced."""
    text = ROLE.sub(
        lambda m: f"`{m.group(1).rsplit('.', 1)[-1] if m.group(0).count('~') else m.group(1)}`", text
    )
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = PROMPT.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent = match.group(1)
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class RstDocstrings(griffe.Extension):
    """Rewrite each docstring for Markdown as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
