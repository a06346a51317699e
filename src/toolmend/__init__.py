"""toolmend: measure, catch, recover from and train away LLM tool-call errors.

The four jobs, one front door (these names, ``toolmend.__all__``, are the stable API):

- **measure**: :func:`run_bench` (with :class:`BenchSettings`), :func:`score_predictions`;
- **catch**: :func:`check_calls`, :class:`Checker`, :func:`repair` (with :func:`load_tools`,
  :func:`parse_calls`);
- **recover**: :class:`Guard`, :class:`GuardPolicy`, :func:`wrap` (an OpenAI or Anthropic client
  that guards every call);
- **teach**: :func:`build_dataset`;

and the data model they share (:class:`Tool`, :class:`ToolCall`, :class:`Message`,
:class:`Sample`, :class:`Finding`) and the errors (every one a :class:`ToolmendError`).

Catch a bad call before it runs:

>>> import toolmend
>>> tools = toolmend.load_tools([{"name": "get_weather", "parameters": {"type": "object",
...     "properties": {"city": {"type": "string"}}, "required": ["city"]}}])
>>> parsed = toolmend.parse_calls('[get_wether(City="Paris")]')
>>> [f.code for f in toolmend.check_calls(parsed.calls, tools)]
['wrong_tool_name']
>>> fixed = toolmend.repair(parsed.calls, tools)
>>> fixed.calls[0].name, fixed.calls[0].arguments, fixed.clean
('get_weather', {'city': 'Paris'}, True)

The data model, the checker and the formats load eagerly; the rest loads on first use of one of
its names, so ``import toolmend`` imports no model SDK. Everything else lives in its subpackage
(``toolmend.benchmarks``, ``toolmend.models`` with ``get_model``, ``toolmend.runs``,
``toolmend.reports`` with ``write_report``, ``toolmend.world`` with ``World``, ``toolmend.env``,
``toolmend.synth``, ``toolmend.guard``, ``toolmend.train``, ``toolmend.serve``); the names this
package still resolves for them (``toolmend.get_model``, ``toolmend.write_report``, ...) are
shortcuts, not part of the stable list.

``toolmend.check`` is the checker's subpackage; its ``check`` function is ``toolmend.check_calls``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolmend._errors import (
    ConfigError,
    DatasetError,
    MissingExtraError,
    ModelError,
    SpecError,
    ToolmendError,
)
from toolmend._schema import Finding, Message, Sample, Tool, ToolCall
from toolmend._version import __version__
from toolmend.check import Checker, repair
from toolmend.check import check as check_calls
from toolmend.formats import load_tools, parse_calls

if TYPE_CHECKING:
    from toolmend._bench import BenchSettings, run_bench
    from toolmend.benchmarks import score_predictions
    from toolmend.guard import Guard, GuardPolicy, wrap
    from toolmend.train import build_dataset


# name -> module that defines it, imported on first access (PEP 562): ``wrap`` brings the openai
# SDK and ``build_dataset`` the training stack only when they are used.
_LAZY = {
    "run_bench": "toolmend._bench",
    "BenchSettings": "toolmend._bench",
    "score_predictions": "toolmend.benchmarks",
    "Guard": "toolmend.guard",
    "GuardPolicy": "toolmend.guard",
    "wrap": "toolmend.guard",
    "build_dataset": "toolmend.train",
    # Shortcuts to names whose home is a subpackage; not in __all__, not promised to stay.
    "ERROR_CODES": "toolmend._schema",
    "ErrorCode": "toolmend._schema",
    "Ref": "toolmend._schema",
    "Trajectory": "toolmend._schema",
    "Fix": "toolmend.check",
    "RepairResult": "toolmend.check",
    "bfcl_error_type": "toolmend.check",
    "critictool_category": "toolmend.check",
    "CallFormat": "toolmend.formats",
    "ParseResult": "toolmend.formats",
    "load_tool": "toolmend.formats",
    "write_calls": "toolmend.formats",
    "BENCHMARKS": "toolmend.benchmarks",
    "Benchmark": "toolmend.benchmarks",
    "SampleScore": "toolmend.benchmarks",
    "BenchResult": "toolmend._bench",
    "Completion": "toolmend.models",
    "GenerateConfig": "toolmend.models",
    "Model": "toolmend.models",
    "get_model": "toolmend.models",
    "RunDir": "toolmend.runs",
    "load_run": "toolmend.runs",
    "runs_dataframe": "toolmend.runs",
    "write_report": "toolmend.reports",
    "Environment": "toolmend.env",
    "FaultPlan": "toolmend.env",
    "FaultRule": "toolmend.env",
    "World": "toolmend.world",
    "generate_tasks": "toolmend.world",
    "Injection": "toolmend.synth.inject",
    "inject": "toolmend.synth.inject",
}


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_LAZY})


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolmend' has no attribute {name!r}")
    if module == "toolmend.models":
        # Model backends that live in higher layers register when their package is imported.
        importlib.import_module("toolmend.benchmarks")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BenchSettings",
    "Checker",
    "ConfigError",
    "DatasetError",
    "Finding",
    "Guard",
    "GuardPolicy",
    "Message",
    "MissingExtraError",
    "ModelError",
    "Sample",
    "SpecError",
    "Tool",
    "ToolCall",
    "ToolmendError",
    "__version__",
    "build_dataset",
    "check_calls",
    "load_tools",
    "parse_calls",
    "repair",
    "run_bench",
    "score_predictions",
    "wrap",
]
