"""The root typer app. Each command lives in its own module and is registered here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from toolmend._version import __version__
from toolmend.benchmarks import BENCHMARKS, STRATEGIES, SUITES
from toolmend.cli import bench, build, cache, check, report, score
from toolmend.models import MODELS


def _help() -> str:
    """The root help: what the command does and every plug-in name it knows (entry points too)."""
    return "\n\n".join(
        [
            "Measure, catch, recover from and train away LLM tool-call errors.",
            f"Suites (toolmend bench SUITE, data built on demand): {', '.join(SUITES.names()) or 'none'}.",
            f"Benchmarks: {', '.join(BENCHMARKS.names())}.",
            f"Model backends (--model NAME or NAME/...): {', '.join(MODELS.names())}.",
            f"Strategies (--strategy): {', '.join(STRATEGIES.names()) or 'none registered'}.",
        ]
    )


def _os_reason(exc: OSError | UnicodeError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, UnicodeError):
        return f"text cannot be written ({exc})"
    name = exc.filename
    if isinstance(exc, FileExistsError) and name is not None and not Path(name).is_dir():
        return f"{name}: exists and is not a directory"
    reason = exc.strerror or str(exc)
    return f"{name}: {reason.lower()}" if name is not None else reason


class _OneLineErrors(TyperGroup):
    """Unreadable or unwritable paths end as one ``error:`` line and exit 2, never a traceback,
    whichever command hits them (an ``--out`` that is a file, a folder without write access)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (OSError, UnicodeError) as exc:
            typer.echo(f"error: {_os_reason(exc)}", err=True)
            raise typer.Exit(2) from None


app = typer.Typer(
    cls=_OneLineErrors,
    name="toolmend",
    help=_help(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"toolmend {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Measure, catch, recover from and train away LLM tool-call errors (see the list above)."""


for _command in (bench, build, cache, check, report, score):
    _command.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
