"""Replacing a benchmark's prompt with a user's own template file (``--prompt-template``).

Every benchmark whose prompt can be replaced takes the template's text as the constructor
option ``prompt_template``; each words its prompt differently, so the text means:

- ``nestools``: the whole prompt, with ``{apis}`` and ``{task}`` markers;
- ``bfcl``: the system prompt (the function docs go where ``{functions}`` is);
- ``seal-tools``, ``api-bank``, ``toolalpaca``: the system prompt, with a ``{tools}`` slot;
- ``critictool``: a JSON object with any of the six mode instructions (``internal``,
  ``internal_cot``, ``skip``, ``skip_cot``, ``finish``, ``finish_cot``); the others keep
  toolmend's wording.

Tool-Reflection-Bench takes none: its prompts are the dataset's own messages.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "sys.txt"
>>> _ = p.write_text("Answer with [f(a=1)] only. {functions}")
>>> bench = with_prompt_template("bfcl", p)
>>> bench.system_prompt
'Answer with [f(a=1)] only. {functions}'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolmend.benchmarks.base import BENCHMARKS, Benchmark, check_constructor, make_benchmark
from toolmend.errors import ConfigError, DatasetError

__all__ = ["read_prompt_template", "with_prompt_template"]


def read_prompt_template(path: str | Path) -> str:
    """The text of a template file; a :class:`~toolmend.DatasetError` naming it when unreadable."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot read the prompt template: {exc.strerror or exc}", path=p) from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"the prompt template is not UTF-8 text ({exc.reason} at byte {exc.start})", path=p
        ) from exc


def with_prompt_template(benchmark: str, path: str | Path | None, **options: Any) -> Benchmark:
    """The benchmark ``benchmark`` with constructor ``options`` and, when ``path`` is given, the
    template in that file; a template the benchmark rejects is a :class:`~toolmend.DatasetError`
    naming the file."""
    if path is None:
        return make_benchmark(benchmark, **options)
    options = {**options, "prompt_template": read_prompt_template(path)}
    cls = BENCHMARKS.get(benchmark)
    check_constructor(benchmark, cls, options)
    try:
        return cls(**options)
    except ConfigError as exc:  # the benchmark rejects the template's content
        raise DatasetError(str(exc), path=path) from exc
