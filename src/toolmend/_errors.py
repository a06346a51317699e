"""The one exception tree of toolmend.

Exceptions describe misuse or infrastructure (a bad file, an unreachable server, a missing
extra). A *model's* mistake is never an exception: it is data — a :class:`toolmend.Finding`
or a failed parse — so that a run keeps going and the mistake gets scored.

Catch everything toolmend raises with ``except ToolmendError``::

    try:
        tools = toolmend.load_tools("tools.json")
    except toolmend.DatasetError as exc:
        print(exc)  # tools.json, line 3, field 'parameters': expected an object
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "ConfigError",
    "DatasetError",
    "EndpointError",
    "MissingExtraError",
    "ModelError",
    "OptionError",
    "ParseError",
    "PathError",
    "ScoringError",
    "SpecError",
    "ToolmendError",
]


class ToolmendError(Exception):
    """Root of every exception toolmend raises on purpose."""


class ConfigError(ToolmendError):
    """An option, flag or argument combination that cannot work."""


class OptionError(ConfigError):
    """A bad argument, named by its parameter(s), so that a front end can name its own spelling.

    ``text`` holds one ``{}`` per parameter; ``detail`` (the value given) follows it. The message
    names the Python parameters, then the command-line flags in parentheses, and
    :meth:`spelled` renders it with any other names (the CLI maps ``model_options`` to ``-M``)::

        >>> err = OptionError("{} must be at least 1", "max_connections", detail="got 0")
        >>> str(err)
        'max_connections must be at least 1, got 0 (--max-connections must be at least 1)'
        >>> err.spelled({"max_connections": "-c"})
        '-c must be at least 1, got 0'
    """

    def __init__(self, text: str, *params: str, detail: str = "") -> None:
        self.text = text
        self.params = params
        self.detail = detail
        api = self.spelled({p: p for p in params})
        flags = text.format(*(flag_of(p) for p in params))
        # A long sentence is not said twice: its flags are enough.
        said = flags if len(flags) <= 80 else ", ".join(dict.fromkeys(flag_of(p) for p in params))
        super().__init__(f"{api} ({said})")

    def spelled(self, names: dict[str, str] | None = None) -> str:
        """The message with each parameter written as ``names`` has it (default: its flag)."""
        names = names or {}
        text = self.text.format(*(names.get(p) or flag_of(p) for p in self.params))
        return f"{text}, {self.detail}" if self.detail else text


FLAGS = {"model_options": "-M", "load_options": "-o", "strategy_options": "-S", "cache": "--no-cache"}
"""API parameters whose command-line flag is not ``--`` and the name with dashes."""


def flag_of(param: str) -> str:
    """The command-line flag of an API parameter: ``max_connections`` → ``--max-connections``.

    >>> flag_of("max_connections"), flag_of("model_options")
    ('--max-connections', '-M')
    """
    return FLAGS.get(param) or "--" + param.replace("_", "-")


class EndpointError(ConfigError):
    """The configured server cannot be the one meant: nothing listens there, the URL is invalid,
    the path does not exist (HTTP 404), or it answers a web page instead of JSON.

    Unlike a :class:`ModelError` this is never retried and never recorded as one sample's fate:
    it stops the run at once, because every other request would fail the same way.
    """

    def __init__(self, url: str, cause: str) -> None:
        super().__init__(f"{url}: {cause}")
        self.url = url
        self.cause = cause


class SpecError(ToolmendError):
    """A tool specification that cannot be turned into a :class:`toolmend.Tool`."""


class DatasetError(ToolmendError):
    """An input file that cannot be read as what it claims to be.

    The message names the file, and where known the line (1-based) and the field, followed by
    what was expected — so a user can open the file at the right place.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.reason = message
        where = [p for p in (self.path, f"line {line}" if line is not None else None) if p]
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ModelError(ToolmendError):
    """A backend failed to produce a completion (transport, server or protocol failure).

    ``retryable`` tells the harness whether trying again may help (429, 5xx, timeouts,
    dropped connections) or not (401, 404, a malformed request).
    """

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.attempts = 1
        """Requests made before giving up (set by the model's retry loop)."""


class MissingExtraError(ToolmendError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it."""

    def __init__(self, package: str, extra: str, purpose: str = "", *, command: str = "") -> None:
        what = f" for {purpose}" if purpose else ""
        # ``command`` replaces the extra's install line where an extra cannot express the install
        # (a package installed with --no-deps).
        how = command or f"pip install 'toolmend[{extra}]'"
        super().__init__(f"{package} is needed{what} but is not installed; install it with `{how}`")
        self.package = package
        self.extra = extra


class ParseError(ToolmendError, ValueError):
    """Text that cannot be read as the format it should be in (a tool list in a prompt, a Python
    literal). Parsers of *model output* turn it into data (a failed parse, a finding) before it
    reaches a caller."""


class ScoringError(ToolmendError, ValueError):
    """A value an official scorer cannot score (toolmend reproduces its behaviour: a score of 0)."""


class PathError(ToolmendError, KeyError):
    """A dotted path (``flights.0.id``) that does not exist in the data it is looked up in."""


def first_error(exc: ValidationError) -> tuple[str, str]:
    """``(where, message)`` of the first error pydantic reports: the dotted field path ("" at the
    top level) and the message without pydantic's "Value error, " prefix. Each caller turns it into
    its one-line error, naming its own file or option::

        >>> from pydantic import BaseModel, ValidationError
        >>> class Point(BaseModel):
        ...     x: int
        >>> try:
        ...     Point.model_validate({"x": "north"})
        ... except ValidationError as exc:
        ...     first_error(exc)
        ('x', 'Input should be a valid integer, unable to parse string as an integer')
    """
    err = exc.errors()[0]
    return ".".join(str(p) for p in err["loc"]), str(err["msg"]).removeprefix("Value error, ")
