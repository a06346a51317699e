"""Training data and config that cannot train well are refused before any model is loaded: a
null prompt or completion, a label that is not a boolean, a row of megabytes, a NaN option.

The model folder here holds only a ``config.json``: every refusal comes before the tokenizer or
the model is read, which is what "before training" means.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolmend._errors import ConfigError, DatasetError
from toolmend.cli._app import app
from toolmend.train import prepare
from toolmend.train._recipes import MAX_ROW_CHARS, load_config

ROW = {"prompt": [{"role": "user", "content": "hi"}], "completion": [{"role": "assistant", "content": "x"}]}


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        ("sft", "prompt", None),
        ("sft", "completion", None),
        ("kto", "completion", 5),
        ("kto", "label", None),
        ("kto", "label", "yes"),
        ("grpo", "prompt", {"a": 1}),
    ],  # fmt: skip
)
def test_a_wrongly_typed_column_names_its_line_and_field(
    model: Path, tmp_path: Path, kind: str, field: str, value: Any
) -> None:
    good = {**ROW, "label": True, "tools": [], "gold_calls": []}
    data = _write(tmp_path / "d.jsonl", [good, {**good, field: value}])
    with pytest.raises(DatasetError) as err:
        prepare(kind, model=model, data=data, out=tmp_path / "out")
    assert err.value.line == 2 and err.value.field == field, str(err.value)
    assert ("got null" if value is None else "expected") in str(err.value)


def test_a_20_mb_row_is_refused_at_once_and_the_limit_is_an_option(model: Path, tmp_path: Path) -> None:
    big = {**ROW, "completion": [{"role": "assistant", "content": "x" * 20_000_000}]}
    data = _write(tmp_path / "d.jsonl", [ROW, big])
    with pytest.raises(DatasetError, match=r"line 2: the row holds 20,000,0\d\d characters") as err:
        prepare("sft", model=model, data=data, out=tmp_path / "out")
    assert f"{MAX_ROW_CHARS:,}" in str(err.value)
    # Raised past the row, the limit lets it through to the next check (the model folder).
    with pytest.raises(Exception) as passed:
        prepare("sft", model=model, data=data, out=tmp_path / "out", config={"max_row_chars": 30_000_000})
    assert "characters" not in str(passed.value)
    with pytest.raises(ConfigError, match="max_row_chars must be a positive integer"):
        prepare("sft", model=model, data=data, out=tmp_path / "out", config={"max_row_chars": "big"})


@pytest.mark.parametrize(
    ("name", "text", "key"),
    [
        ("c.json", '{"learning_rate": NaN}', "learning_rate"),
        ("c.yaml", "lora:\n  alpha: .inf\n", "lora.alpha"),
        ("c.yml", "lr: [1, .nan]\n", r"lr\[1\]"),
    ],  # fmt: skip
)
def test_a_non_finite_config_number_is_refused(tmp_path: Path, name: str, text: str, key: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=rf"{name}: {key}: (nan|inf) is not a finite number"):
        load_config(path)


def test_cli_refuses_a_null_completion_and_a_nan_config_with_one_line(model: Path, tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", [{**ROW, "completion": None}])
    args = ["train", "sft", "--model", str(model), "--data", str(data), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "line 1, field 'completion'" in result.output, result.output
    config = tmp_path / "c.json"
    config.write_text('{"learning_rate": NaN}')
    result = CliRunner().invoke(app, [*args, "--config", str(config)])
    assert result.exit_code == 2 and "learning_rate: nan is not a finite number" in result.output, (
        result.output
    )
    assert "Traceback" not in result.output


def test_a_non_finite_option_given_as_a_dict_is_refused(model: Path, tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", [ROW])
    with pytest.raises(ConfigError, match=r"config: learning_rate: nan is not a finite number"):
        prepare("sft", model=model, data=data, out=tmp_path / "out", config={"learning_rate": float("nan")})
