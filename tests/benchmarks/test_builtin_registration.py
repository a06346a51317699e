"""Plug-ins are found by name, lazily, in a fresh interpreter: built-in benchmarks, suites and
model backends, and third-party ones registered through entry points."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolmend.benchmarks import BENCHMARKS, SUITES, load_builtin_benchmarks

BUILTIN = ["api-bank", "bfcl", "critictool", "nestools", "reflection-bench", "seal-tools", "toolalpaca"]


def _fresh(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_every_builtin_name_is_known_without_importing_it() -> None:
    code = (
        "import sys\n"
        "from toolmend.benchmarks import BENCHMARKS, SUITES\n"
        f"assert BENCHMARKS.names() == {BUILTIN!r}, BENCHMARKS.names()\n"
        "assert SUITES.names() == ['critic']\n"
        "assert 'toolmend.benchmarks.nestools' not in sys.modules\n"
        "assert BENCHMARKS.get('nestools').__name__ == 'NesTools'\n"
        "assert 'toolmend.benchmarks.bfcl' not in sys.modules\n"
    )
    proc = _fresh(code)
    assert proc.returncode == 0, proc.stderr


def test_get_model_checklist_in_a_fresh_interpreter() -> None:
    proc = _fresh("import toolmend; print(toolmend.get_model('checklist').name)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "checklist"


@pytest.mark.parametrize("name", BUILTIN)
def test_each_builtin_declares_how_it_runs(name: str) -> None:
    cls = BENCHMARKS.get(name)
    assert cls.name == name
    assert cls.reply_format in ("json", "python", "tags", "nestools")
    assert cls.headline


def test_loading_all_registers_every_name() -> None:
    load_builtin_benchmarks()
    assert set(BUILTIN) <= set(BENCHMARKS.names()) and "critic" in SUITES


def test_third_party_plugins_register_through_entry_points(tmp_path: Path) -> None:
    # A real installed distribution (a dist-info folder on the path) with entry points in the
    # three groups; toolmend finds each name only when it is asked for.
    (tmp_path / "tm_plugin.py").write_text(
        "from toolmend.models import ScriptedModel\n"
        "from toolmend.benchmarks.bfcl.benchmark import BFCLBenchmark\n"
        "def backend(rest, cache, options):\n"
        "    return ScriptedModel(['ok'], name='plug/' + rest)\n"
        "class Plugged(BFCLBenchmark):\n"
        "    name = 'plugged'\n"
        "class Echo:\n"
        "    name = 'echo'\n"
        "    def wrap(self, generate, state):\n"
        "        return generate\n"
    )
    info = tmp_path / "tm_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tm-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[toolmend.models]\nplug = tm_plugin:backend\n\n"
        "[toolmend.benchmarks]\nplugged = tm_plugin:Plugged\n\n"
        "[toolmend.strategies]\necho = tm_plugin:Echo\n"
    )
    code = (
        "import sys\n"
        "from toolmend.models import get_model, MODELS\n"
        "from toolmend.benchmarks import BENCHMARKS, STRATEGIES\n"
        "assert 'plug' in MODELS.names() and 'tm_plugin' not in sys.modules\n"
        "print(get_model('plug/x').name, BENCHMARKS.get('plugged').name, STRATEGIES.get('echo')().name)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = _fresh(code, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["plug/x", "plugged", "echo"]
    # And the CLI lists them.
    help_proc = subprocess.run(
        [sys.executable, "-m", "toolmend", "--help"],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
    )
    assert help_proc.returncode == 0, help_proc.stderr
    for name in ("plug", "plugged", "echo", "checklist", "critic"):
        assert name in help_proc.stdout
