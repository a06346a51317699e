"""Error injection: operators that turn a correct tool-call step into a labelled wrong one.

Each operator is deterministic for a seed, says when it does not apply (``None``), and labels
what it did in the taxonomy of the paper it comes from:

- CriticTool's internal errors — ``tool_selection``, ``tool_hallucination``, ``parameter_key``,
  ``parameter_value`` (labels ``tool_select_error`` / ``tool_hallucination_error`` /
  ``parameters_key_error`` / ``parameters_value_error``) — and ``external_error`` (timeouts,
  rate limits, … with the error text of :mod:`toolmend.env.faults`);
- Tool-Reflection-Bench's P1-P4 — ``call_order_swap``, ``redundant_call``, ``missing_call``,
  ``argument_error``;
- HiTEC's global checklist errors 0-7 — ``hitec_wrong_tool_name`` … ``hitec_wrong_tool_count``.

>>> from toolmend.world import World, generate_tasks
>>> task = generate_tasks(seed=0)[0]
>>> inj = inject(task.calls, World.create(0).tools, "tool_hallucination", seed=1)
>>> inj.label, inj.calls[inj.step].name not in {t.name for t in World.create(0).tools}
('tool_hallucination_error', True)
>>> inject(task.calls, World.create(0).tools, "tool_hallucination", seed=1) == inj
True

A model can play CriticTool's error simulator through :func:`inject_with_model`; its corruption
is kept only when it really is the labelled kind of error.
"""

from toolmend.synth.inject import critictool_ops, hitec_ops, reflection_ops  # noqa: F401  (registers)
from toolmend.synth.inject.api import ToolsLike, applicable, checker_for, inject, operator_names
from toolmend.synth.inject.llm import ChatFn, build_messages, inject_with_model, validate_corruption
from toolmend.synth.inject.model import OPERATORS, Family, InjectContext, Injection, InjectionSource, Operator

__all__ = [
    "OPERATORS",
    "Family",
    "ChatFn",
    "InjectContext",
    "Injection",
    "Operator",
    "InjectionSource",
    "ToolsLike",
    "applicable",
    "build_messages",
    "checker_for",
    "inject",
    "inject_with_model",
    "operator_names",
    "validate_corruption",
]
