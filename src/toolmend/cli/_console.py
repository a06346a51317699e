"""Console helpers shared by the commands: rich on a terminal, plain text under CI or in a pipe."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from toolmend._jsontext import loads

__all__ = ["command_seconds", "console", "fail", "key_values", "plain_output", "started_by_main"]

_PROCESS: list[bool] = []
"""Set by :func:`toolmend.cli.main`: this process was started for one command."""


def started_by_main() -> None:
    """Mark this process as one command's (the console script, ``python -m toolmend``)."""
    _PROCESS.append(True)


def _process_age() -> float | None:
    """Seconds since this process started (Linux: /proc), so imports count too; else ``None``."""
    try:
        stat = Path("/proc/self/stat").read_text()
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def command_seconds(since: float) -> float:
    """The command's wall time: from the process's start where it was started for this command
    (so start-up and imports count), else from ``since`` (a ``time.perf_counter()`` reading taken
    when the command began, e.g. inside a test's CliRunner)."""
    own = time.perf_counter() - since
    age = _process_age() if _PROCESS else None
    return max(own, age) if age is not None else own


def plain_output() -> bool:
    """Whether to avoid live displays and colour (not a TTY, or running under CI)."""
    return bool(os.environ.get("CI")) or not sys.stdout.isatty()


def console(stderr: bool = False) -> Console:
    """A rich console; without colour or cursor tricks when :func:`plain_output`."""
    plain = plain_output()
    return Console(
        stderr=stderr, no_color=plain, highlight=not plain, soft_wrap=plain, width=120 if plain else None
    )


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (2: bad usage or unreadable input)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def key_values(pairs: list[str], flag: str) -> dict[str, Any]:
    """Repeated ``KEY=VALUE`` options → a dict; a value that reads as JSON is taken as JSON
    (``n=3`` → ``3``), anything else stays text. A pair without ``=`` fails naming ``flag``."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            fail(f"{flag} expects KEY=VALUE, got {pair!r}")
        try:
            options[key] = loads(raw)
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("nested too deeply"):
                fail(f"{flag} {key}: {exc.msg}")
            options[key] = raw
    return options
