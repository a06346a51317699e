"""One ``run_bench``: settings given as keywords or as a :class:`BenchSettings` make the same run;
an unknown or bad option is an error naming the parameter (the CLI names the flag); the library
prints nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolmend import ConfigError
from toolmend._bench import BenchSettings, RunOptions, run_bench
from toolmend._errors import OptionError
from toolmend.cli._app import app
from toolmend.runs import load_run


@pytest.fixture(autouse=True)
def _cache(private_cache_dir: Path) -> None:
    pass


def _records(run: Path) -> list[dict[str, Any]]:
    return [r.model_dump(exclude={"latency_s"}) for r in sorted(load_run(run).records, key=lambda r: r.id)]


def test_keywords_and_a_settings_object_make_the_same_run(tmp_path: Path, data_dir: Path) -> None:
    kw: dict[str, Any] = {
        "data": data_dir / "bfcl", "categories": ["simple_python", "irrelevance"], "limit": 6, "seed": 3,
        "mode": "improved", "model_options": {"delay": 0.0},
    }  # fmt: skip
    by_keywords = run_bench("bfcl", "scripted", runs_dir=tmp_path / "a", **kw)
    settings = BenchSettings(**{**kw, "data": str(kw["data"])})
    by_object = run_bench("bfcl", "scripted", settings, runs_dir=tmp_path / "b")
    assert by_keywords.settings == by_object.settings
    assert by_keywords.summary.metrics == by_object.summary.metrics
    assert _records(by_keywords.run_dir) == _records(by_object.run_dir)
    # The model may come with the settings too; a keyword wins over the object.
    third = run_bench(
        "bfcl",
        None,
        settings.model_copy(update={"model": "scripted", "limit": 2}),
        limit=6,
        runs_dir=tmp_path / "c",
    )
    assert third.settings == by_keywords.settings


def test_settings_and_run_options_are_written_once() -> None:
    """Every keyword of run_bench is a field of exactly one of the two typed models."""
    assert not (set(BenchSettings.model_fields) & set(RunOptions.model_fields))


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"limt": 3}, "'limt'.*Did you mean 'limit'"),
        ({"max_conections": 3}, "'max_conections'.*Did you mean 'max_connections'"),
    ],
)
def test_an_unknown_option_is_named(tmp_path: Path, options: dict[str, Any], name: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown run_bench option {name}"):
        run_bench("bfcl", "scripted", runs_dir=tmp_path, **options)


def test_errors_name_the_parameter_and_the_cli_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"^max_connections must be at least 1, got 0") as err:
        run_bench("bfcl", "scripted", max_connections=0, runs_dir=tmp_path)
    assert err.value.params == ("max_connections",)
    assert err.value.spelled() == "--max-connections must be at least 1, got 0"
    with pytest.raises(OptionError, match=r"^model_options noise of noisy: input should be a valid number"):
        run_bench("world", "noisy/scripted", model_options={"noise": "high"}, runs_dir=tmp_path)


def test_the_library_prints_nothing(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = run_bench(
        "bfcl", "scripted", data=data_dir / "bfcl", categories=["simple_python"], limit=3, runs_dir=tmp_path
    )
    run_bench("bfcl", resume=first.run_dir)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["critc"], "error: unknown benchmark 'critc' (known: "),
        (["wrold", "--model", "scripted"], "Did you mean 'world'?"),
        (["critc"], "Did you mean 'critic'?"),
        (
            ["world", "-m", "noisy/scripted", "-M", "noise=high"],
            "error: -M noise of noisy: input should be a valid number",
        ),
        (
            ["world", "-m", "noisy/scripted", "-M", "rates=3"],
            "error: -M rates of noisy: input should be a valid dictionary",
        ),
        (["world", "-m", "scripted", "-M", "delay=soon"], "error: -M delay of scripted"),
        (
            ["world", "-m", "scripted", "--strategy", "best-of-n", "-S", "n=x"],
            "error: -S n of best-of-n: input should be a valid integer",
        ),
        (["world", "-m", "scripted", "-o", "trials=abc"], "error: trials must be a whole number"),
        (["bfcl", "-m", "scripted", "--max-connections", "0"], "error: "),
        (["bfcl"], "error: --model is required for bfcl"),
    ],
)
def test_cli_usage_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    res = CliRunner().invoke(app, ["bench", *args, "--runs-dir", str(tmp_path), "--limit", "2"])
    assert res.exit_code == 2, res.output
    text = res.output.strip()
    assert "\n" not in text and "Traceback" not in text, text
    assert message in text
    assert "critic" in text or args[0] != "critc"
