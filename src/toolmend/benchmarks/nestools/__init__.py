"""NesTools: nested tool-call chains (loader, prompt with candidate tools, official scorer).

>>> from toolmend.benchmarks.nestools import NesTools
>>> NesTools.name
'nestools'
"""

from toolmend.benchmarks.nestools._benchmark import NesTools
from toolmend.benchmarks.nestools._data import load_nestools

__all__ = [
    "NesTools",
    "load_nestools",
]
