"""Hostile files given to the command line get one ``error:`` line and exit 2, never a traceback.

Each case runs ``python -m toolmend`` in a fresh process, as a user does, so nothing a test runner
sets up (a raised recursion limit, a captured stream) hides a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolmend

DEEP = 100_000
SRC = str(Path(toolmend.__file__).resolve().parents[1])


def _deep() -> str:
    return "[" * DEEP + "]" * DEEP


def _toolmend(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "CI": "1",
        "NO_COLOR": "1",
        "TOOLMEND_CACHE_DIR": str(cwd / "cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", "toolmend", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hostile")
    deep = _deep()
    files = {
        "deep": root / "deep.json",
        "deep_line": root / "deep.jsonl",
        "deep_yaml": root / "deep.yaml",
        "tools": root / "tools.json",
        "calls": root / "calls.txt",
        "bfcl_data": root / "bfcl",
        "model": root / "model",
        "run": root / "run",
        "policy": root / "policy.json",
    }
    files["deep"].write_text(deep)
    files["deep_yaml"].write_text("options: " + deep)
    files["deep_line"].write_text('{"id": "simple_python_0", "output": "x", "extra": ' + deep + "}\n")
    files["tools"].write_text('[{"name": "f", "parameters": {"type": "object", "properties": {}}}]')
    files["calls"].write_text('[{"name": "f", "arguments": {}}]')
    files["bfcl_data"].mkdir()
    for category in ("simple_python", "multiple", "parallel", "parallel_multiple"):
        (files["bfcl_data"] / f"BFCL_v4_{category}.json").write_text(
            '{"id": "' + category + '_0", "question": ' + deep + "}\n"
        )
    # train reads its data and config before it loads a model: a folder with a config.json will do.
    files["model"].mkdir()
    (files["model"] / "config.json").write_text("{}")
    # A run directory whose manifest is nested too deep: read by --resume and by report.
    files["run"].mkdir()
    (files["run"] / "manifest.json").write_text('{"a": ' + deep + "}")
    (files["run"] / "samples.jsonl").write_text(deep + "\n")
    # A real run whose samples.jsonl holds a line nested too deep (and no results.json, so that
    # --resume reads it).
    made = _toolmend(["bench", "bfcl", "--model", "scripted", "--limit", "1", "--no-cache", "--no-report",
                      "--runs-dir", str(root / "runs")], cwd=root)  # fmt: skip
    assert made.returncode == 0, made.stderr[-2000:]
    (files["run_samples"],) = (root / "runs").iterdir()
    (files["run_samples"] / "results.json").unlink()
    (files["run_samples"] / "samples.jsonl").write_text(
        '{"id": "simple_python_0", "outputs": ' + deep + "}\n"
    )
    return files


def _cases() -> list[tuple[str, list[str]]]:
    bfcl = ["bench", "bfcl", "--model", "scripted", "--limit", "1", "--no-cache", "--no-report"]
    train = ["train", "sft", "--model", "{model}", "--out", "{out}"]
    return [
        ("check --context", ["check", "--tools", "{tools}", "--calls", "{calls}", "--context", "{deep}"]),
        ("check --tools", ["check", "--tools", "{deep}", "--calls", "{calls}"]),
        ("score -p", ["score", "bfcl", "-p", "{deep_line}"]),
        ("score --data", ["score", "bfcl", "-p", "{deep_line}", "--data", "{bfcl_data}"]),
        ("bench --data", [*bfcl, "--data", "{bfcl_data}"]),
        (
            "bench replay/",
            ["bench", "bfcl", "--model", "replay/{deep_line}", "--limit", "1", "--no-cache", "--no-report"],
        ),
        ("bench --resume", ["bench", "bfcl", "--resume", "{run}"]),
        ("report", ["report", "{run}"]),
        ("bench --resume samples.jsonl", ["bench", "bfcl", "--resume", "{run_samples}"]),
        ("report samples.jsonl", ["report", "{run_samples}"]),
        (
            "build --data",
            [
                "build",
                "critic",
                "--source",
                "bfcl",
                "--data",
                "{bfcl_data}",
                "--out",
                "{out}",
                "--limit",
                "2",
            ],
        ),
        ("train --data", [*train, "--data", "{deep_line}"]),
        ("train --config", [*train, "--data", "{deep_line}", "--config", "{deep}"]),
        ("train --config yaml", [*train, "--data", "{deep_line}", "--config", "{deep_yaml}"]),
        # A command-line argument holds at most 128 KiB on Linux: 60,000 deep fits.
        ("bench -o", [*bfcl, "-o", "categories=" + "[" * 60_000 + "]" * 60_000]),
        ("train --set", [*train, "--data", "{deep_line}", "--set", "x=" + "[" * 60_000 + "]" * 60_000]),
        (
            "serve --policy",
            ["serve", "--upstream", "http://127.0.0.1:9/v1", "--port", "0", "--policy", "{deep}"],
        ),
    ]


@pytest.mark.parametrize(("name", "args"), _cases(), ids=[c[0] for c in _cases()])
def test_input_nested_100000_deep_is_one_error_line(
    name: str, args: list[str], hostile: dict[str, Path], tmp_path: Path
) -> None:
    names = {k: str(v) for k, v in hostile.items()} | {"out": str(tmp_path / "out")}
    result = _toolmend([a.format(**names) for a in args], cwd=tmp_path)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    assert len(lines[0]) < 600
    # Refused for its depth, not for some other fault of the case's set-up.
    assert any(w in lines[0] for w in ("nested too deeply", "recursion limit")), lines[0]
    shutil.rmtree(tmp_path / "out", ignore_errors=True)


GOLD = (
    '{"id": "simple_python_0", "output": "[calculate_triangle_area(base=10, height=5)]"}\n'
    '{"id": "simple_python_1", "output": "[math.factorial(number=5)]"}\n'
)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("BOM at the start", b"\xef\xbb\xbf" + GOLD.encode()),
        ("BOM at the start of line 2", GOLD.replace("\n{", "\n\ufeff{", 1).encode()),
        ("UTF-16 with its BOM", GOLD.encode("utf-16")),
        ("no BOM", GOLD.encode()),
    ],
)
def test_score_and_bench_replay_read_a_bom_alike(
    name: str, data: bytes, tmp_path: Path, data_dir: Path, private_cache_dir: Path
) -> None:
    """``score -p`` and ``bench --model replay/`` read the same predictions file: they accept
    and refuse the same bytes, and score what they accept the same."""
    from typer.testing import CliRunner

    from toolmend.cli import app

    bfcl = tmp_path / "bfcl"
    (bfcl / "possible_answer").mkdir(parents=True)
    for sub in ("", "possible_answer/"):
        head = (data_dir / "bfcl" / f"{sub}BFCL_v4_simple_python.json").read_text(encoding="utf-8")
        (bfcl / f"{sub}BFCL_v4_simple_python.json").write_text("".join(head.splitlines(True)[:2]))
    predictions = tmp_path / "p.jsonl"
    predictions.write_bytes(data)
    score = CliRunner().invoke(app, ["score", "bfcl", "-p", str(predictions), "--data", str(bfcl), "--json"])
    bench = CliRunner().invoke(
        app,
        [
            "bench",
            "bfcl",
            "--model",
            f"replay/{predictions}",
            "--data",
            str(bfcl),
            "--no-cache",
            "--no-report",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--json",
        ],  # fmt: skip
    )
    assert score.exit_code == bench.exit_code, (name, score.output[-500:], bench.output[-500:])
    if score.exit_code == 0:
        accuracy = [
            json.loads(r.stdout[r.stdout.index("{") :])["metrics"]["accuracy:simple_python"]
            for r in (score, bench)
        ]
        assert accuracy == [1.0, 1.0], (name, accuracy)
    else:
        assert score.exit_code == 2 and "not UTF-8" in score.output and "utf-8" in bench.output.lower()
