"""``benchmarks/real_models.py --from-runs``: each table is titled with the model that made it."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from repo_module import repo_module

from toolmend import run_bench
from toolmend.models import get_model


@pytest.fixture(scope="module")
def real_models() -> ModuleType:
    return repo_module("benchmarks/real_models.py")


def _run(name: str, runs: Path) -> None:
    model = get_model(name, script=lambda messages: "[]")
    run_bench("bfcl", model, categories=["irrelevance"], limit=1, runs_dir=runs)


def test_tables_name_the_model_of_the_runs_not_the_scripts_default(
    real_models: ModuleType, tmp_path: Path
) -> None:
    _run("scripted/gemma-like", tmp_path / "a")
    _run("scripted/smollm-like", tmp_path / "b")
    text = real_models.main(["--from-runs", str(tmp_path)])
    titles = [line for line in text.splitlines() if line.startswith("**REAL MODEL")]
    assert [t.split(",")[0] for t in titles] == [
        "**REAL MODEL: scripted/gemma-like",
        "**REAL MODEL: scripted/smollm-like",
    ]
    assert "smollm2" not in text


def test_a_label_over_runs_of_two_models_is_refused_in_one_line(
    real_models: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _run("scripted/one", tmp_path / "a")
    _run("scripted/two", tmp_path / "b")
    with pytest.raises(SystemExit) as exc:
        real_models.main(["--from-runs", str(tmp_path), "--label", "Gemma 3 270M"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scripted/one" in err and "scripted/two" in err
    assert "**REAL MODEL: Gemma 3 270M" in real_models.main(
        ["--from-runs", str(tmp_path / "a"), "--label", "Gemma 3 270M"]
    )
