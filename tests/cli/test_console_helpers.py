"""The CLI's shared helpers: KEY=VALUE options."""

from __future__ import annotations

import pytest
import typer

from toolmend.cli._console import key_values


def test_values_read_as_json_else_text() -> None:
    got = key_values(["n=3", "flag=true", "name=gpt-4o", "empty=", "eq=a=b", 'obj={"k": [1]}'], "--option")
    assert got == {"n": 3, "flag": True, "name": "gpt-4o", "empty": "", "eq": "a=b", "obj": {"k": [1]}}


@pytest.mark.parametrize("pair", ["novalue", "=3"])
def test_a_pair_without_key_or_equals_fails_naming_the_flag(
    pair: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(typer.Exit) as exc:
        key_values([pair], "--model-option")
    assert exc.value.exit_code == 2
    assert f"--model-option expects KEY=VALUE, got {pair!r}" in capsys.readouterr().err
