"""Every code block of README.md and docs/**/*.md runs, page by page, top to bottom, as a reader
would run it after the documented install (`bash scripts/install.sh`).

What a block is comes from its fence's language:

- ``console``: each line starting with ``$ `` is a command (a trailing backslash continues it);
  the lines up to the next command are what it prints. Every printed line the page shows must be
  in the command's real output (whitespace collapsed; a run folder's time stamp and a duration in
  seconds may differ); a line holding ``…`` or ``...`` stands for output left out.
- ``bash`` / ``sh``: a script, run by ``bash -e``.
- ``python``: a script, run by the venv's Python; a block holding ``>>>`` runs as a doctest.
- ``json`` / ``toml`` / ``yaml``: must parse, unless it holds ``…`` (an abridged example). Any
  other fence (none, ``text``) is output: not run.

Every command exits 0 unless a marker says otherwise. A marker is an HTML comment on the line
before the fence (invisible on the rendered page):

- ``<!-- docs-test: skip: REASON -->`` leaves a block out; the reason is required (a GPU, the
  network, a long training run, a server the reader brings). Keep these few.
- ``<!-- docs-test: exit=1,0 -->`` gives the exit statuses of the block's commands, in order.
- ``<!-- docs-test: background -->`` starts each of the block's commands as a server and goes on
  once it is ready: its first shown output line has appeared and the loopback ports that line (or
  the command's ``--port``) names accept connections. A command ending in `` &`` is started the
  same way without a marker. Servers are stopped when the page ends.
- ``<!-- docs-test: file=NAME -->`` saves the block as the file ``NAME`` instead of running it (a
  request body, a script the page runs later); a ``python`` block whose first line is a comment
  naming a file (``# upstream.py``) is saved the same way.
- ``<!-- docs-test: upstream -->`` starts, before the page's first block, a stand-in model server
  at ``127.0.0.1:8000`` (vLLM's default port), an OpenAI-compatible one whose model answers every
  request that offers tools with one call, ``get_weather(city="Oslo", days="3", Unit="celsius")``,
  which the guard can repair.

Flags combine with commas (``background, upstream``).

Each page runs in a scratch folder holding links to ``examples/`` and ``benchmarks/``, with the
shared data beside it as ``../shared``, ``.venv/bin/toolmend`` and ``.venv/bin/python`` (also on
``PATH``, so docs pages may say plain ``toolmend``) running this interpreter, a private cache and
``CI=1``. A command may run for ``COMMAND_TIMEOUT`` seconds at most.
"""

from __future__ import annotations

import doctest
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolmend._shared import shared_dir

pytestmark = pytest.mark.slow  # long tests in few items: handed to a worker first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
RUN = {"console", "bash", "sh", "python", "json", "toml", "yaml"}
UPSTREAM_PORT, SERVE_PORT = 8000, 8700
COMMAND_TIMEOUT = 300
LINKED = ("examples", "benchmarks", "tests")


@dataclass
class Block:
    page: Path
    line: int
    """1-based line of the opening fence."""
    lang: str
    text: str
    marker: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        match = re.match(r"skip\s*:\s*(.*)", self.marker)
        return match.group(1).strip() if match else None

    @property
    def flags(self) -> set[str]:
        return (
            set()
            if self.skip_reason is not None
            else {f.strip() for f in re.split(r",\s*(?=[a-z])", self.marker) if f.strip()}
        )

    @property
    def file(self) -> str | None:
        """The file name this block is saved as, if it is one (see the module docstring)."""
        for flag in self.flags:
            if flag.startswith("file="):
                return flag[5:]
        first = self.text.lstrip("\n").split("\n", 1)[0]
        match = re.fullmatch(r"#\s*([\w.-]+\.py)\s*", first) if self.lang == "python" else None
        return match.group(1) if match else None

    @property
    def exits(self) -> list[int]:
        match = re.search(r"exit=(\d+(?:,\d+)*)", self.marker)
        return [int(n) for n in match.group(1).split(",")] if match else []


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, each with the marker on the line before it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, lang = len(match["indent"]), match["fence"], match["lang"].lower()
        previous = lines[i - 1] if i else ""
        marker = MARKER.match(previous)
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        found.append(Block(page, i + 1, lang, "\n".join(body) + "\n", marker.group(1) if marker else ""))
        i = j + 1
    return found


# ---- console blocks: commands and the output they show ------------------------------------------


@dataclass
class Command:
    text: str
    shown: list[str] = field(default_factory=list)


def commands(block: Block) -> list[Command]:
    out: list[Command] = []
    continuing = False
    for line in block.text.splitlines():
        if continuing:
            out[-1].text += "\n" + line
            continuing = line.endswith("\\")
        elif line.startswith("$ "):
            out.append(Command(line[2:]))
            continuing = line.endswith("\\")
        elif out and line.strip():
            out[-1].shown.append(line)
    return out


VOLATILE = re.compile(r"\d{8}T\d{6}Z|\b\d+(?:\.\d+)? s\b")


def collapse(line: str) -> str:
    return " ".join(line.split())


def line_pattern(shown: str) -> re.Pattern[str]:
    """A shown output line as a pattern: literal, but for a run folder's stamp and a duration."""
    text, parts, last = collapse(shown), [], 0
    for match in VOLATILE.finditer(text):
        parts.append(re.escape(text[last : match.start()]))
        parts.append(r"\d{8}T\d{6}Z" if "T" in match.group() else r"\d+(?:\.\d+)? s")
        last = match.end()
    parts.append(re.escape(text[last:]))
    return re.compile("".join(parts))


def missing_lines(shown: list[str], printed: str) -> list[str]:
    """The shown lines (not elisions) that appear nowhere in ``printed``."""
    real = [collapse(line) for line in printed.splitlines()]
    missing = []
    for line in shown:
        if "…" in line or "..." in line:
            continue
        pattern = line_pattern(line)
        if not any(pattern.fullmatch(r) for r in real):
            missing.append(line)
    return missing


# ---- the scratch folder a page runs in ----------------------------------------------------------


def shim(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def scratch(root: Path, cache: Path) -> tuple[Path, dict[str, str]]:
    """A folder laid out like a checkout after the install, and the environment to run in it."""
    repo = root / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    for name in LINKED:
        (repo / name).symlink_to(ROOT / name, target_is_directory=True)
    (root / "shared").symlink_to(shared_dir(), target_is_directory=True)
    bin_dir = repo / ".venv" / "bin"
    shim(bin_dir / "python", f'exec "{sys.executable}" "$@"')
    shim(bin_dir / "toolmend", f'exec "{sys.executable}" -m toolmend "$@"')
    env = dict(os.environ)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PYTEST_CURRENT_TEST"):
        env.pop(name, None)
    src = str(ROOT / "src")
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p),
        TOOLMEND_CACHE_DIR=str(cache),
        TOOLMEND_SHARED=str(root / "shared"),
        CI="1",
        NO_COLOR="1",
        COLUMNS="200",
        TERM="dumb",
    )
    return repo, env


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def ports(line: str) -> list[int]:
    """The loopback ports a server's start-up line names: it is ready once they accept connections."""
    return [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", line)]


def weather_model(body: dict[str, Any]) -> Any:
    """The fake upstream's model: a call with a string for an integer and a misnamed key."""
    from fake_openai_server import Reply  # type: ignore[import-not-found]

    if not body.get("tools"):
        return Reply(text="Hello.")
    arguments = json.dumps({"city": "Oslo", "days": "3", "Unit": "celsius"})
    return Reply(text=None, tool_calls=[{"id": "call_1", "name": "get_weather", "arguments": arguments}])


def start_upstream() -> Any:
    from fake_openai_server import FakeOpenAIServer  # type: ignore[import-not-found]

    return FakeOpenAIServer(handler=weather_model, port=UPSTREAM_PORT).start()


# ---- running a page -----------------------------------------------------------------------------


class Page:
    def __init__(self, repo: Path, env: dict[str, str]) -> None:
        self.repo, self.env = repo, env
        self.background: list[subprocess.Popen[bytes]] = []

    def run(self, command: str, where: str, expect: int = 0) -> str:
        try:
            done = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                cwd=self.repo,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=COMMAND_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{where}: `{command}` ran past {COMMAND_TIMEOUT} s")
        printed = done.stdout.decode("utf-8", "replace")
        if done.returncode != expect:
            pytest.fail(f"{where}: `{command}` exited {done.returncode}, not {expect}:\n{printed[-4000:]}")
        return printed

    def start(self, command: Command, where: str) -> None:
        log = self.repo / f".background-{len(self.background)}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                ["bash", "-c", f"exec {command.text}"],
                cwd=self.repo,
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.background.append(process)
        want = [line for line in command.shown if "…" not in line and "..." not in line][:1]
        named = ports(want[0]) if want else []
        named += [int(p) for p in re.findall(r"--port[ =](\d+)", command.text)]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            printed = log.read_text(encoding="utf-8", errors="replace")
            if process.poll() is not None:
                pytest.fail(f"{where}: `{command.text}` exited {process.returncode}:\n{printed[-4000:]}")
            shown = not want or not missing_lines(want, printed)
            if shown and (want or named) and all(listening(p) for p in named):
                return
            if not want and not named and time.monotonic() > deadline - 115:
                return  # nothing to wait for: give it five seconds to start
            time.sleep(0.2)
        pytest.fail(f"{where}: `{command.text}` was not ready ({want!r}, ports {named}) within 120 s")

    def stop(self) -> None:
        for process in self.background:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()

    def console(self, block: Block) -> None:
        cmds = commands(block)
        assert cmds, f"{block.where}: a console block with no '$ ' command"
        if "background" in block.flags:
            for command in cmds:
                self.start(command, block.where)
            return
        exits = block.exits or [0] * len(cmds)
        assert len(exits) == len(cmds), (
            f"{block.where}: exit= names {len(exits)} statuses for {len(cmds)} commands"
        )
        for command, expect in zip(cmds, exits, strict=True):
            if command.text.rstrip().endswith("&"):
                self.start(Command(command.text.rstrip().rstrip("&").rstrip(), command.shown), block.where)
                continue
            printed = self.run(command.text, block.where, expect)
            missing = missing_lines(command.shown, printed)
            assert not missing, (
                f"{block.where}: `{command.text}` no longer prints these lines the page shows:\n"
                + "\n".join(missing)
                + f"\n--- it printed:\n{printed[-4000:]}"
            )

    def python(self, block: Block) -> None:
        name = f".block-{block.line}.py"
        (self.repo / name).write_text(block.text, encoding="utf-8")
        if ">>>" in block.text:
            flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
            code = (
                "import doctest, sys; "
                f"r = doctest.testfile({name!r}, module_relative=False, optionflags={flags}); "
                "sys.exit(1 if r.failed else 0)"
            )
            self.run(f'python -c "{code}"', block.where)
        else:
            self.run(f"python {name}", block.where)

    def block(self, block: Block) -> None:
        if block.file is not None:
            (self.repo / block.file).write_text(block.text, encoding="utf-8")
        elif block.lang == "console":
            self.console(block)
        elif block.lang in {"bash", "sh"}:
            script = self.repo / f".block-{block.line}.sh"
            script.write_text(block.text, encoding="utf-8")
            self.run(f"bash -e {script.name}", block.where, (block.exits or [0])[0])
        elif block.lang == "python":
            self.python(block)
        elif "…" in block.text:
            return  # an abridged data example: shown, not parsed
        else:
            self.data(block)

    def data(self, block: Block) -> None:
        try:
            if block.lang == "json":
                json.loads(block.text)
            elif block.lang == "toml":
                tomllib.loads(block.text)
            elif block.lang == "yaml":
                yaml.safe_load(block.text)
        except (ValueError, yaml.YAMLError) as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
            pytest.fail(f"{block.where}: the {block.lang} block does not parse: {exc}")


def needs_upstream(page: list[Block]) -> bool:
    return any("upstream" in b.flags for b in page)


@pytest.fixture(scope="module")
def docs_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for every page, so the embedding model's vectors are computed once."""
    return tmp_path_factory.mktemp("docs-cache")


def page_ids() -> list[str]:
    return [str(p.relative_to(ROOT)) for p in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=page_ids())
def test_every_block_of_the_page_runs(page: Path, tmp_path: Path, docs_cache: Path) -> None:
    found = [b for b in blocks(page) if b.skip_reason is None and (b.lang in RUN or b.file)]
    if not found:
        pytest.skip("no block to run")
    repo, env = scratch(tmp_path, docs_cache)
    server = None
    if needs_upstream(found):
        for port in (UPSTREAM_PORT, SERVE_PORT):
            if not port_free(port):
                pytest.skip(f"port {port} on 127.0.0.1 is taken; this page's model server needs it")
        server = start_upstream()
    runner = Page(repo, env)
    try:
        for block in found:
            runner.block(block)
    finally:
        runner.stop()
        if server is not None:
            server.stop()


# ---- rules for the pages themselves -------------------------------------------------------------


FLAG = r"exit=\d+(?:,\d+)*|background|upstream|file=[\w./-]+"


def test_every_marker_is_known_and_every_skip_says_why() -> None:
    problems = []
    for page in PAGES:
        for block in blocks(page):
            if not block.marker:
                continue
            if block.marker.startswith("skip"):
                reason = block.skip_reason or ""
                if len(reason.split()) < 3:
                    problems.append(f"{block.where}: a skip marker needs a reason of a few words")
            elif unknown := [f for f in block.flags if not re.fullmatch(FLAG, f)]:
                problems.append(f"{block.where}: unknown marker {', '.join(unknown)!r}")
            elif block.lang not in RUN and block.file is None:
                problems.append(
                    f"{block.where}: a marker on a block that is not run ({block.lang or 'no language'})"
                )
    assert problems == []


MACHINE_PATH = re.compile(r"(?<![\w.~$])(/tmp/|/work/|/home/|/root/|/Users/|/opt/|/var/tmp/)")


def test_no_page_carries_a_machine_path() -> None:
    found = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if MACHINE_PATH.search(line):
                found.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert found == []


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 210, f"README.md has {len(lines)} lines; the manual belongs in docs/"


def test_ci_runs_the_readmes_test_command() -> None:
    """The README's second setup command is the test command, and .ci/run runs exactly it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = next(b for b in blocks(ROOT / "README.md") if b.lang == "bash" and "scripts/install.sh" in b.text)
    lines = [line.split("#")[0].strip() for line in setup.text.splitlines() if line.strip()]
    assert len(lines) == 2, f"README.md's setup is two commands, found {lines}"
    install, tests = lines
    assert install.startswith("bash scripts/install.sh && .venv/bin/toolmend ")
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    ci = [line for line in ci if line and not line.startswith("#")]
    assert "bash scripts/install.sh" in ci
    assert ci[-1] == tests, f".ci/run ends with {ci[-1]!r}, README.md's test command is {tests!r}"
    assert readme.count(tests) >= 1


def test_the_parser_reads_markers_commands_and_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n<!-- docs-test: exit=1,0 -->\n```console\n$ a \\\n  b\nout 1.5 s\n…\n$ c\n```\n"
        "- item\n\n  ```python\n  print(1)\n  ```\n",
        encoding="utf-8",
    )
    first, second = blocks(page)
    assert (first.lang, first.line, first.exits) == ("console", 3, [1, 0])
    cmds = commands(first)
    assert [c.text for c in cmds] == ["a \\\n  b", "c"]
    assert cmds[0].shown == ["out 1.5 s", "…"]
    assert missing_lines(cmds[0].shown, "out   12.25 s\n") == []
    assert missing_lines(cmds[0].shown, "out 1.5 ms\n") == ["out 1.5 s"]
    assert (second.lang, second.text) == ("python", "print(1)\n")


def test_flags_files_and_background_commands(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: background, upstream -->\n```console\n$ serve --port 8123\n```\n"
        "<!-- docs-test: exit=1,0, upstream -->\n```console\n$ a\n$ b\n```\n"
        "```python\n# upstream.py\nprint(1)\n```\n"
        "<!-- docs-test: file=req.json -->\n```json\n{}\n```\n"
        "<!-- docs-test: skip: no server here at all -->\n```bash\nserve\n```\n",
        encoding="utf-8",
    )
    server, both, script, request, skipped = blocks(page)
    assert both.flags == {"exit=1,0", "upstream"} and both.exits == [1, 0]
    assert server.flags == {"background", "upstream"} and needs_upstream([server])
    assert (script.file, request.file, server.file) == ("upstream.py", "req.json", None)
    assert skipped.flags == set() and skipped.skip_reason == "no server here at all"
    assert ports("toolmend serve: http://127.0.0.1:8700/v1 -> http://127.0.0.1:8000/v1") == [8700, 8000]
