"""ROUGE-L F, computed exactly as the ``rouge==1.0.1`` package computes it (NesTools' scorer uses
that package), without its cost.

That package's "rouge-l" is the *summary-level* variant with set semantics, which differs from
the textbook sentence-level LCS in ways that change scores:

- the text is cut into sentences at every ``.`` (so ``"3.5"`` is two sentences, ``"3"`` and
  ``"5"``); empty pieces are dropped, whitespace inside a piece is collapsed, tokens are the
  pieces split on single spaces; nothing is lowercased and no other punctuation is removed;
- ``m`` and ``n`` are the numbers of *distinct* tokens of reference and candidate;
- the overlap is the number of distinct tokens in the union, over every (reference sentence,
  candidate sentence) pair, of one particular reconstructed LCS (ties broken as the package
  does: diagonal on a match, else up only when strictly longer, else left);
- ``F = 2PR / (P + R + 1e-8)``, so identical texts score 0.99999999…, not 1.

Where the package raises ``ValueError`` (a text with no sentence: empty, or only periods),
:func:`rouge_l_f` returns 0.0 — the value NesTools' scorer records when it catches that error.

>>> round(rouge_l_f("the cat sat", "the cat sat down"), 6)
0.857143
>>> rouge_l_f("", "anything")
0.0
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["rouge_l_defined", "rouge_l_f", "rouge_l_scores"]


def _sentences(text: str) -> list[list[str]]:
    return [" ".join(piece.split()).split(" ") for piece in text.split(".") if len(piece) > 0]


def _lcs_tokens(x: list[str], y: list[str]) -> set[str]:
    """Distinct tokens of the LCS of ``x`` (reference) and ``y`` (candidate) that the package's
    back-tracking reconstructs."""
    common = set(x).intersection(y)
    if not common:
        return set()
    n, m = len(x), len(y)
    # Rows of the DP table, full table kept because back-tracking walks it.
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        xi = x[i - 1]
        row, prev = table[i], table[i - 1]
        for j in range(1, m + 1):
            if xi == y[j - 1]:
                row[j] = prev[j - 1] + 1
            else:
                up, left = prev[j], row[j - 1]
                row[j] = up if up > left else left
    out: set[str] = set()
    i, j = n, m
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            out.add(x[i - 1])
            i -= 1
            j -= 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return out


def rouge_l_defined(candidate: str, reference: str) -> bool:
    """Whether ``rouge==1.0.1`` scores this pair at all (it raises ``ValueError`` when either text
    has no sentence: empty, or nothing but periods). Scorers that, like NesTools', turn that
    error into a zero for a whole value need to know.

    >>> rouge_l_defined("a", "..."), rouge_l_defined("a", "b")
    (False, True)
    """
    return bool(_sentences(candidate)) and bool(_sentences(reference))


@lru_cache(maxsize=65536)
def rouge_l_scores(candidate: str, reference: str) -> tuple[float, float, float]:
    """``(f, p, r)`` of summary-level ROUGE-L as ``rouge==1.0.1`` computes them (see the module
    docstring); ``(0.0, 0.0, 0.0)`` where that package would raise.

    >>> rouge_l_scores("a b", "a b c")[1:]
    (1.0, 0.6666666666666666)
    """
    hyp = _sentences(candidate)
    ref = _sentences(reference)
    if not hyp or not ref:
        return (0.0, 0.0, 0.0)
    m = len({w for s in ref for w in s})
    n = len({w for s in hyp for w in s})
    union: set[str] = set()
    for r in ref:
        for c in hyp:
            union |= _lcs_tokens(r, c)
    llcs = len(union)
    r_lcs = llcs / m
    p_lcs = llcs / n
    f_lcs = 2.0 * ((p_lcs * r_lcs) / (p_lcs + r_lcs + 1e-8))
    return (f_lcs, p_lcs, r_lcs)


def rouge_l_f(candidate: str, reference: str) -> float:
    """ROUGE-L F of ``candidate`` against ``reference``, equal to
    ``Rouge().get_scores(candidate, reference)[0]["rouge-l"]["f"]`` of ``rouge==1.0.1``.

    Case-sensitive, like the package; lowercase both sides first for NesTools' behaviour.

    >>> rouge_l_f("Paris", "Paris") > 0.9999999
    True
    """
    return rouge_l_scores(candidate, reference)[0]
