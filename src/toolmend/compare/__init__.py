"""Matching and similarity primitives: value equality modes (exact, BFCL-compatible, fuzzy),
one-to-one alignment (optimal and greedy), ROUGE-L as ``rouge==1.0.1`` computes it, and
sentence-embedding similarity with an on-disk cache.

``Embedder`` needs the ``embed`` extra (sentence-transformers); it is imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolmend.compare._align import Alignment, align, greedy_align
from toolmend.compare._rouge import rouge_l_defined, rouge_l_f, rouge_l_scores
from toolmend.compare._values import CompareMode, canonical_json, normalize_bfcl_string, values_equal

if TYPE_CHECKING:
    from toolmend.compare._embed import Embedder

__all__ = [
    "Alignment",
    "CompareMode",
    "Embedder",
    "align",
    "canonical_json",
    "greedy_align",
    "normalize_bfcl_string",
    "rouge_l_defined",
    "rouge_l_f",
    "rouge_l_scores",
    "values_equal",
]


def __getattr__(name: str) -> Any:
    # embed.py itself imports only numpy, but keep it off the import path of the light helpers.
    if name == "Embedder":
        from toolmend.compare._embed import Embedder

        return Embedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
