"""One rooted exception tree: everything toolmend raises is a ToolmendError, keeping the builtin
base callers expect (``except ValueError`` still catches a ParseError)."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from toolmend._errors import ParseError, PathError, ScoringError, ToolmendError

SRC = Path(__file__).resolve().parents[1] / "src" / "toolmend"
BUILTIN_ERRORS = {
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
}
# Pydantic's protocol: a validator raises ValueError and pydantic reports a ValidationError.
VALIDATORS = {"model_validator", "field_validator"}
# Python's own protocols: a module __getattr__ raises AttributeError; abstract stubs NotImplementedError.
PROTOCOL = {"AttributeError", "NotImplementedError"}


def _decorator_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        names.add(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
    return names


def builtin_raises(src: Path) -> list[str]:
    """``raise <BuiltinError>(...)`` statements outside pydantic validators."""
    found = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed: set[int] = set()
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and _decorator_names(node) & VALIDATORS
            ):
                allowed.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or node.exc is None or id(node) in allowed:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id in BUILTIN_ERRORS and exc.id not in PROTOCOL:
                found.append(f"{path.relative_to(src.parent)}:{node.lineno}: raise {exc.id}")
    return found


def test_toolmend_raises_only_its_own_exceptions() -> None:
    assert builtin_raises(SRC) == []


def test_the_scan_finds_a_builtin_raise(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "from pydantic import model_validator\n"
        "def f():\n    raise ValueError('x')\n"
        "@model_validator(mode='after')\ndef g(self):\n    raise ValueError('pydantic protocol')\n"
    )
    assert builtin_raises(tmp_path) == [f"{tmp_path.name}/m.py:3: raise ValueError"]


@pytest.mark.parametrize(
    ("cls", "base"), [(ParseError, ValueError), (ScoringError, ValueError), (PathError, KeyError)]
)
def test_new_errors_keep_their_builtin_base(cls: type[Exception], base: type[Exception]) -> None:
    assert issubclass(cls, ToolmendError) and issubclass(cls, base)
    from toolmend.benchmarks.bfcl._decode import DecodeError
    from toolmend.env import extract_path
    from toolmend.formats import load_lenient

    assert issubclass(DecodeError, ParseError)
    with pytest.raises(ParseError):
        load_lenient("{not json at all")
    with pytest.raises(PathError):
        extract_path({"a": {}}, "a.b")


def test_first_error_names_the_nested_field_and_drops_pydantics_prefix() -> None:
    from pydantic import BaseModel, ValidationError, field_validator

    from toolmend._errors import first_error

    class Inner(BaseModel):
        k: int

        @field_validator("k")
        @classmethod
        def positive(cls, v: int) -> int:
            if v <= 0:
                raise ValueError("k must be positive")
            return v

    class Outer(BaseModel):
        items: list[Inner]

    with pytest.raises(ValidationError) as info:
        Outer.model_validate({"items": [{"k": 1}, {"k": -2}]})
    assert first_error(info.value) == ("items.1.k", "k must be positive")
    with pytest.raises(ValidationError) as top:
        Outer.model_validate([1])
    assert first_error(top.value)[0] == ""
