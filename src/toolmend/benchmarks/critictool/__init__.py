"""CriticTool: does a model notice, name and recover from tool-call errors?

- :mod:`.records` reads the official files into :class:`~toolmend.Sample` objects;
- :mod:`.prompts` holds the mode instructions (replaceable) and builds the prompt;
- :mod:`toolmend.formats._critictool` reads replies as the official ``format_load`` does;
- :mod:`.runner` runs a model, including the interactive external-error retry loop;
- :mod:`.checklist` is the rule-based checklist critic (model ``checklist``);
- :mod:`.scoring` computes the official per-sample metrics; :mod:`.overall` aggregates them.

>>> from toolmend.benchmarks import BENCHMARKS
>>> BENCHMARKS.get("critictool").__name__
'CriticToolBenchmark'
"""

from toolmend.benchmarks.critictool._benchmark import CriticToolBenchmark
from toolmend.benchmarks.critictool._records import load_critictool

__all__ = [
    "CriticToolBenchmark",
    "load_critictool",
]
