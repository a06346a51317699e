"""Secrets passed on the command line never reach a file toolmend writes (issue 16, item 11)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fake_openai_server import FakeOpenAIServer, Reply

from toolmend.runs import Manifest
from toolmend.runs._redact import redact_argv

KEY, HEADER, PASSWORD, TOKEN = "sk-live-KEY0123456789", "HDRSECRET42", "PWSECRET77", "TOKSECRET99"


def test_a_secret_passed_any_way_never_reaches_a_written_file(tmp_path: Path, data_dir: Path) -> None:
    seen: list[dict[str, object]] = []

    def handler(body: dict[str, object]) -> Reply:
        seen.append(body)
        return Reply(text="[]")

    server = FakeOpenAIServer(handler).start()
    runs, cache, log = tmp_path / "runs", tmp_path / "cache", tmp_path / "log.txt"
    common = [
        "bench", "bfcl", "-m", "openai/tiny", "--data", str(data_dir / "bfcl"), "--categories", "irrelevance",
        "--limit", "3", "--runs-dir", str(runs), "--cache-dir", str(cache),
    ]  # fmt: skip
    headers = json.dumps({"X-Api-Key": HEADER, "X-Auth": f"Bearer {TOKEN}"})
    runs_args = [
        # A key and auth headers as backend options.
        ["--base-url", server.base_url, "-M", f"api_key={KEY}", "-M", f"headers={headers}"],
        # Credentials in the URL (aiohttp sends them as basic auth); one sample fails with a 400
        # whose error message, recorded in samples.jsonl, quotes the URL.
        ["--base-url", server.base_url.replace("http://", f"http://user:{PASSWORD}@"), "--no-cache"],
    ]
    try:
        with log.open("w") as out:
            for extra in runs_args:
                if "--no-cache" in extra:
                    server.fail_next("triangle", *[Reply(status=400)] * 3)
                proc = subprocess.run(
                    [sys.executable, "-c", "from toolmend.cli._app import main; main()", *common, *extra],
                    stdout=out, stderr=subprocess.STDOUT, timeout=300, env=_env(),
                )  # fmt: skip
                assert proc.returncode == 0, log.read_text()
    finally:
        server.stop()
    assert len(seen) == 3 + 2  # both runs really talked to the server with those credentials
    written = [p for p in [*runs.rglob("*"), *cache.rglob("*"), log] if p.is_file()]
    assert sum(p.name == "manifest.json" for p in written) == 2 and any(
        p.name == "report.html" for p in written
    )
    assert any(b"HTTP 400" in p.read_bytes() for p in written if p.name == "samples.jsonl")
    for path in written:
        data = path.read_bytes()
        for secret in (KEY, HEADER, PASSWORD, TOKEN):
            assert secret.encode() not in data, f"{secret} found in {path}"
    commands = [json.loads(p.read_text())["command"] for p in runs.rglob("manifest.json")]
    assert any("api_key=***" in c for c in commands)


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}


def test_redaction_forms() -> None:
    argv = ["toolmend", "--api-key", KEY, "--token=abc", "-M", f'headers={{"Authorization": "Bearer {TOKEN}"}}',
            "--api-key-env", "MY_KEY", "-o", "max_tokens=5"]  # fmt: skip
    out = redact_argv(argv)
    assert out[:4] == ["toolmend", "--api-key", "***", "--token=***"]
    assert TOKEN not in " ".join(out) and "MY_KEY" in out and "max_tokens=5" in out
    m = Manifest(
        benchmark="b", model="m", command=argv, config={"bench": {"headers": {"Cookie": "c=1"}, "seed": 3}}
    )
    assert m.config["bench"] == {"headers": {"Cookie": "***"}, "seed": 3} and KEY not in m.command
