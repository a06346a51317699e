"""``toolmend serve`` on the command line: bad usage is one line and exit 2; a real server
process answers /healthz and proxies to its upstream."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from cli_usage import assert_bad_usage

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "files", "words"),
    [
        (["--upstream", "localhost:8000"], {}, "expected an http(s) URL"),
        (
            ["--upstream", "http://x/v1", "--policy", "p.toml"],
            {"p.toml": "max_reasks_per_turn = -1\n"},
            "max_reasks_per_turn must be at least 0",
        ),
        (
            ["--upstream", "http://x/v1", "--policy", "p.toml"],
            {"p.toml": "parallel = 3\n"},
            "p.toml: parallel must be keep_valid or hold_all",
        ),
        (
            ["--upstream", "http://x/v1", "--policy", "p.toml"],
            {"p.toml": "max_reask = 1\n"},
            "field 'max_reask'",
        ),
        (["--upstream", "http://x/v1", "--policy", "p.json"], {"p.json": "{oops"}, "not valid JSON"),
        (["--upstream", "http://x/v1", "--policy", "missing.toml"], {}, "cannot read the policy file"),
        (["--upstream", "http://x/v1", "--api-key-env", "TM_NO_SUCH_VAR"], {}, "TM_NO_SUCH_VAR is not set"),
        (["--upstream", "http://x/v1", "--shadow", "--strict"], {}, "cannot be combined"),
        (["--upstream", "http://x/v1", "--metrics-auth"], {}, "--metrics-auth needs --api-key-env"),
        (["--upstream", "ftp://user:topsecret@x/v1"], {}, "'ftp://x/v1': expected an http(s) URL"),
        (
            ["--upstream", "http://x/v1", "--max-tools", "0"],
            {},
            "--max-tools: Input should be greater than 0",
        ),
        (
            ["--upstream", "http://x/v1", "--max-schema-depth", "100"],
            {},
            "--max-schema-depth: Input should be less",
        ),
        (
            ["--upstream", "http://x/v1", "--check-seconds", "-1"],
            {},
            "--check-seconds: Input should be greater",
        ),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], files: dict[str, str], words: str
) -> None:
    assert_bad_usage("serve", tmp_path, args, files, words)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_server_process_proxies(tmp_path: Path) -> None:
    upstream = subprocess.Popen([sys.executable, str(ROOT / "tests" / "serve" / "scripted_upstream.py")],
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert upstream.stdout is not None
    up_port = int(upstream.stdout.readline().split()[1])
    port = _port()
    (tmp_path / "guard.toml").write_text("[guard]\nmax_reasks_per_turn = 1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TM_PROXY_KEY": "sekrit"}
    proxy = subprocess.Popen(
        [sys.executable, "-m", "toolmend", "serve", "--upstream", f"http://127.0.0.1:{up_port}/v1", "--port", str(port),
         "--policy", str(tmp_path / "guard.toml"), "--api-key-env", "TM_PROXY_KEY", "--traces", str(tmp_path / "tr")],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        body = {"model": "m", "messages": [{"role": "user", "content": "m1"}],
                "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]}  # fmt: skip
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer sekrit"})  # fmt: skip
        with urllib.request.urlopen(req, timeout=10) as resp:
            answer = json.loads(resp.read())
            assert resp.headers["x-toolmend-outcome"] == "accepted"
        assert answer["choices"][0]["message"]["tool_calls"][0]["id"] == "call_m1"
        assert json.loads((tmp_path / "tr" / "traces.jsonl").read_text())["id"].startswith("req-")
    finally:
        proxy.terminate()
        upstream.terminate()
        _, err = proxy.communicate(timeout=10)
        upstream.wait(10)
    assert "toolmend serve: http://127.0.0.1:" in err and "sekrit" not in err


def test_open_host_warns_and_upstream_credentials_stay_hidden(tmp_path: Path) -> None:
    port = _port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proxy = subprocess.Popen(
        [sys.executable, "-m", "toolmend", "serve", "--upstream", "http://user:topsecret@127.0.0.1:9/v1",
         "--host", "0.0.0.0", "--port", str(port), "--traces", str(tmp_path / "tr")],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        health = ""
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as resp:
                    health = resp.read().decode()
                    break
            except OSError:
                time.sleep(0.1)
        assert json.loads(health) == {"status": "ok", "upstream": "http://127.0.0.1:9/v1"}
        manifest = (tmp_path / "tr" / "manifest.json").read_text()
        assert "topsecret" not in manifest and "http://127.0.0.1:9/v1" in manifest
    finally:
        proxy.terminate()
        _, err = proxy.communicate(timeout=10)
    assert "warning: listening on 0.0.0.0 without a client key" in err
    assert "-> http://127.0.0.1:9/v1" in err and "topsecret" not in err
