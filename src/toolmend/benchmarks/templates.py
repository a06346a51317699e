"""Replacing a benchmark's prompt with a user's own template file (``--prompt-template``).

Each benchmark words its prompt differently, so each takes its template in its own form:

- ``nestools``: the whole prompt, with ``{apis}`` and ``{task}`` markers;
- ``bfcl``: the system prompt (the function docs follow it);
- ``seal-tools``, ``api-bank``, ``toolalpaca``: the system prompt template;
- ``critictool``: a JSON object with any of the six mode instructions (``internal``,
  ``internal_cot``, ``skip``, ``skip_cot``, ``finish``, ``finish_cot``); the others keep
  toolmend's wording.

Tool-Reflection-Bench has no template: its prompts are the dataset's own messages.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "sys.txt"
>>> _ = p.write_text("Answer with [f(a=1)] only.")
>>> template_options("bfcl", p)
{'system_prompt': 'Answer with [f(a=1)] only.'}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolmend.errors import ConfigError, DatasetError

__all__ = ["template_options"]

_SYSTEM_TEXT = {"bfcl": "system_prompt", "seal-tools": "system_template", "api-bank": "system_template",
                "toolalpaca": "system_template"}  # fmt: skip


def template_options(benchmark: str, path: str | Path) -> dict[str, Any]:
    """The constructor options that make ``benchmark`` use the template in ``path``."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot read the prompt template: {exc.strerror or exc}", path=p) from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"the prompt template is not UTF-8 text ({exc.reason} at byte {exc.start})", path=p
        ) from exc
    if benchmark == "nestools":
        return {"prompt_template": p}
    if benchmark in _SYSTEM_TEXT:
        return {_SYSTEM_TEXT[benchmark]: text}
    if benchmark == "critictool":
        from toolmend.benchmarks.critictool.prompts import Instructions

        try:
            return {"instructions": Instructions.model_validate_json(text)}
        except ValidationError as exc:
            raise DatasetError(
                "expected a JSON object of mode instructions (internal, internal_cot, skip, skip_cot, "
                f"finish, finish_cot): {exc.errors()[0]['msg']}",
                path=p,
            ) from exc
    raise ConfigError(f"{benchmark} has no replaceable prompt (its prompts come from its data)")
