"""The runner, run directories, reports and the CLI name no benchmark: every benchmark declares
what they need (reply format, headline score, detail keys, gold reply, options) itself.

Names may appear in docstrings, comments and ``help=`` texts (examples for a reader), nowhere
else. ``cli/build.py`` is exempt: ``toolmend build critic`` is the critic suite's own command.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "toolmend"
GENERIC = [SRC / "bench.py", *sorted((SRC / "runs").rglob("*.py")), *sorted((SRC / "reports").rglob("*.py")),
           *sorted(p for p in (SRC / "cli").rglob("*.py") if p.name != "build.py")]  # fmt: skip
NAMES = (
    "bfcl",
    "nestools",
    "critictool",
    "critic",
    "reflection",
    "seal",
    "api-bank",
    "apibank",
    "toolalpaca",
)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
        # An attribute docstring: a string statement right after an assignment.
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for prev, stmt in zip(body, body[1:], strict=False):
                docstring = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                if isinstance(prev, ast.Assign | ast.AnnAssign) and docstring:
                    ids.add(id(stmt.value))  # type: ignore[attr-defined]
    return ids


def _help_texts(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "help":
            ids.update(id(n) for n in ast.walk(node.value))
    return ids


def benchmark_names_in_code(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree) | _help_texts(tree)
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        elif isinstance(node, ast.ImportFrom):
            text = node.module or ""
        elif isinstance(node, ast.Import):
            text = " ".join(a.name for a in node.names)
        elif isinstance(node, ast.Name | ast.Attribute):
            text = node.id if isinstance(node, ast.Name) else node.attr
        if text is not None:
            low = text.lower()
            found += [
                f"{path.name}:{getattr(node, 'lineno', 0)}: {n!r} in {text!r}" for n in NAMES if n in low
            ]
    return found


def test_no_benchmark_name_in_the_generic_layers() -> None:
    assert len(GENERIC) > 10
    assert [hit for path in GENERIC for hit in benchmark_names_in_code(path)] == []


def test_the_scan_sees_a_name_in_code_but_not_in_docs(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        '"""Runs bfcl."""\n'
        "import typer\n"
        "def g(x = typer.Option(help='e.g. nestools')):\n"
        "    '''For critictool.'''\n"
        "    if x == 'bfcl':\n"
        "        return 1\n"
    )
    assert benchmark_names_in_code(f) == ["m.py:5: 'bfcl' in 'bfcl'"]
