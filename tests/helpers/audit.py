"""What the test process opens and connects to, seen through one audit hook (``sys.addaudithook``).

Hooks cannot be removed, so the one hook is installed once, when this module is loaded, and records
only inside :func:`watched`. Opens of the interpreter's and the project's own code (a module imported
lazily) are not recorded; a socket connection is recorded with its address::

    from audit import watched

    with watched() as seen:
        check(hostile_spec, calls)
    assert seen == []
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_WATCHING = [False]
_SEEN: list[tuple[str, Any]] = []
_PREFIXES = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).parents[2] / "src")})
_OTHER_EVENTS = ("socket.getaddrinfo", "urllib.Request", "subprocess.Popen", "os.system")


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCHING[0]:
        return
    if event == "open":
        path = str(args[0])
        if path.startswith(_PREFIXES) and path.endswith((".py", ".pyc", ".so")):
            return
        _SEEN.append((event, path))
    elif event == "socket.connect":
        _SEEN.append((event, args[1]))
    elif event in _OTHER_EVENTS:
        _SEEN.append((event, repr(args)[:200]))


sys.addaudithook(_hook)


@contextmanager
def watched() -> Iterator[list[tuple[str, Any]]]:
    """The ``(event, what)`` pairs seen while the block runs: ``open`` with the path,
    ``socket.connect`` with the address, the others with their arguments' repr."""
    _SEEN.clear()
    _WATCHING[0] = True
    try:
        yield _SEEN
    finally:
        _WATCHING[0] = False
