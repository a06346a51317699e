"""The ``toolmend`` command line: a thin typer layer over the Python API."""

from toolmend.cli._app import app, main

__all__ = ["app", "main"]
