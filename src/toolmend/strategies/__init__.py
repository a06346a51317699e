"""Recovery strategies: each wraps a benchmark's ``generate`` and composes with any benchmark.

======================  ==================================================================
``guard``               repair first, targeted re-ask for what repair cannot fix
``hitec-icl``           HiTEC's global checklist, then a local-checklist-guided second round
``reflect``             ``<reflect>``/``<call>``/``<final>`` on a finding or tool error
``self-refine``         ToolACE-R: refine until the model keeps its answer or ``max_refine``
``best-of-n``           N samples, fewest findings, then agreement
``env-policy``          retry / skip / finish for failing tools
======================  ==================================================================

>>> import asyncio
>>> from toolmend import Message, Sample, Tool
>>> sample = Sample(id="1", tools=[Tool(name="f", parameters={"type": "object",
...     "properties": {"a": {"type": "integer"}}, "required": ["a"]})])
>>> replies = iter(["[f()]", "[f(a=1)]"])
>>> async def generate(messages, *, epoch=None):
...     return next(replies)
>>> state = SolveState(sample=sample, benchmark=None)
>>> [guarded] = [s.wrap(generate, state) for s in build_strategies("guard")]
>>> asyncio.run(guarded([Message(role="user", content="go")]))
'[f(a=1)]'
>>> [e["action"] for e in state.events if e["kind"] == "guard"]
['reask', 'accept']
"""

from toolmend._strategy import STRATEGIES, Generate, SolveState, Strategy
from toolmend.models._providers import MODELS
from toolmend.strategies._base import apply_strategies, build_strategies, strategy_name

__all__ = [
    "STRATEGIES",
    "Generate",
    "SolveState",
    "Strategy",
    "apply_strategies",
    "build_strategies",
    "strategy_name",
]

# The built-in strategies, and the noisy model wrapper, each loaded on first use of its name.
for _name, _attr in {"guard": "guard", "hitec-icl": "hitec_icl", "reflect": "reflect", "self-refine": "self_refine",
                     "best-of-n": "best_of_n", "env-policy": "env_policy"}.items():  # fmt: skip
    STRATEGIES.add_lazy(_name, f"toolmend.strategies._builtin:{_attr}")
MODELS.add_lazy("noisy", "toolmend.strategies._noisy:noisy_backend")
