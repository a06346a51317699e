"""The docs site builds with ``mkdocs build --strict`` (every page in the navigation, every link
resolves, the API reference renders from the docstrings), and the results page is what
docs/results.yaml gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repo_module import repo_module

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]


def test_the_results_page_is_generated_from_the_results_file() -> None:
    results = repo_module("scripts/results_page.py")
    page = results.render(yaml.safe_load(results.SOURCE.read_text(encoding="utf-8")))
    assert results.PAGE.read_text(encoding="utf-8") == page, "run: python scripts/results_page.py"


def test_the_results_file_names_every_field(tmp_path: Path) -> None:
    results = repo_module("scripts/results_page.py")
    data = yaml.safe_load(results.SOURCE.read_text(encoding="utf-8"))
    del data["results"][0]["machine"]
    with pytest.raises(ValueError, match="result 1 has no machine"):
        results.render(data)


def test_the_main_jobs_figures_are_the_pinned_ones() -> None:
    """The results page and tests/benchmarks/test_critic_main_job.py cannot drift apart."""
    pinned = repo_module("tests/benchmarks/test_critic_main_job.py", "main_job")
    data = yaml.safe_load((ROOT / "docs" / "results.yaml").read_text(encoding="utf-8"))
    values = {
        r["figure"].split(" ")[0]: r["value"]
        for r in data["results"]
        if r["command"] == "toolmend bench critic"
    }
    head = pinned.HEADLINE
    assert values["CriticTool"] == f"{head['overall']:.2f}"
    assert values["Detect"] == " / ".join(f"{head[k]:.2f}" for k in ("detect", "category", "tool", "args"))


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra (scripts/install.sh installs it)")
    pytest.importorskip("mkdocstrings", reason="the docs extra (scripts/install.sh installs it)")
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    assert (tmp_path / "site" / "reference" / "index.html").is_file()
    api = (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8")
    assert "run_bench" in api and "GuardPolicy" in api
    assert (tmp_path / "site" / "results" / "index.html").is_file()
