"""The root typer app. Each command lives in its own module and is registered here."""

from __future__ import annotations

import typer

from toolmend import __version__
from toolmend.cli import bench, build, cache, check, report, score

app = typer.Typer(
    name="toolmend",
    help="Measure, catch, recover from and train away LLM tool-call errors.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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
    """Measure, catch, recover from and train away LLM tool-call errors."""


for _command in (bench, build, cache, check, report, score):
    _command.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
