"""NesTools as a :class:`~toolmend.benchmarks.Benchmark`, registered as ``"nestools"``.

>>> bench = NesTools(distractors=0)
>>> samples = bench.load(limit=20)
>>> bench.prompt(samples[0])[0].role
'user'
>>> scores = [bench.score(s, bench.gold(s)) for s in samples]
>>> bench.aggregate(scores)["avg_f1"]
1.0
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from toolmend._errors import ConfigError
from toolmend._schema import Message, Sample, Tool
from toolmend._shared import shared_dir
from toolmend.benchmarks._base import BENCHMARKS, Benchmark, Mode, Prediction, SampleScore
from toolmend.benchmarks._replies import reply_text as write_reply
from toolmend.benchmarks.nestools._data import gold_chain, load_nestools, to_official_output
from toolmend.benchmarks.nestools._metric import (
    COUNT_KEYS,
    GoldPrep,
    count_compat,
    count_improved,
    prepare_gold,
)
from toolmend.benchmarks.nestools._prompt import TextEncoder, candidate_tools, load_template, render_prompt
from toolmend.models._base import Completion

__all__ = ["NesTools", "micro_metrics"]


def _prf(correct: float, pred: float, gold: float) -> tuple[float, float, float]:
    # Official guards: P is 0 with nothing predicted; F1 is 0 when P + R is 0. R divides by the
    # gold count unguarded there (it is never 0 on the real data); here an empty gold gives 0.
    p = 1.0 * correct / pred if pred != 0 else 0.0
    r = 1.0 * correct / gold if gold != 0 else 0.0
    f = 2 * p * r / (p + r) if (p + r) != 0 else 0.0
    return p, r, f


def micro_metrics(counts: Sequence[dict[str, float]], *, nested: bool = True) -> dict[str, float]:
    """NesTools' headline numbers (fractions in [0, 1]) from per-sample counts, summed in order.

    Keys: ``n``, ``format``, ``{api,order,param,nest}_{p,r,f1}``, ``avg_f1`` (the mean of the
    four F1s, as the official table's "Average") and ``tree_pass``, plus the summed error
    counts ``para_error_*`` and ``nest_error_*``. ``nested=False`` drops the nest columns and
    the average, as the official script does when only depth 1 is evaluated.
    """
    total = dict.fromkeys(COUNT_KEYS, 0.0)
    for c in counts:
        for k in COUNT_KEYS:
            total[k] += c[k]
    n = len(counts)
    out: dict[str, float] = {"n": float(n), "format": total["format"] / n if n else 0.0}
    f1s: dict[str, float] = {}
    for part in ("api", "order", "param", "nest"):
        if part == "nest" and not nested:
            continue
        p, r, f = _prf(total[f"{part}_correct"], total[f"{part}_pred"], total[f"{part}_gold"])
        out[f"{part}_p"], out[f"{part}_r"], out[f"{part}_f1"] = p, r, f
        f1s[part] = f
    if nested:
        # summed in the official order (nest, param, order, api) so the float is bit-identical
        out["avg_f1"] = (f1s["nest"] + f1s["param"] + f1s["order"] + f1s["api"]) / 4
    out["tree_pass"] = total["tree"] / n if n else 0.0
    for k in COUNT_KEYS:
        if "error" in k:
            out[k] = total[k]
    return out


class _CandidateSet:
    """The samples of one :meth:`NesTools.load`, whose candidate lists are built together (the
    distractor pool is all of their tools) the first time any of them is needed."""

    def __init__(self, samples: Sequence[Sample], per_tool: int, seed: int) -> None:
        self.samples = list(samples)
        self.per_tool = per_tool
        self.seed = seed
        self.index = {s.id: i for i, s in enumerate(self.samples)}
        self.lists: list[list[Tool]] | None = None

    def holds(self, sample: Sample) -> bool:
        i = self.index.get(sample.id)
        if i is None:
            return False
        mine = self.samples[i]
        return mine is sample or mine.metadata.get("api_ids") == sample.metadata.get("api_ids")

    def tools(self, sample: Sample, encoder: TextEncoder) -> list[Tool]:
        if self.lists is None:
            self.lists = candidate_tools(self.samples, encoder, per_tool=self.per_tool, seed=self.seed)
        return self.lists[self.index[sample.id]]


_PARTS = tuple(
    (f"{part}_p", f"{part}_r", f"{part}_correct", f"{part}_pred", f"{part}_gold")
    for part in ("api", "order", "param", "nest")
)


@BENCHMARKS.register("nestools")
class NesTools(Benchmark):
    """NesTools (Han et al., COLING 2025): nested tool-call chains scored by micro P/R/F1 of
    Selection, Order, Parameter and Nested parameter, their average, format accuracy and tree
    pass rate.

    Data: ``test_data.jsonl`` + ``test_api_ids.jsonl`` (``default_data``). The prompt asks for
    the paper's output format (a list of ``api_name`` / ``api_id`` / ``parameters`` /
    ``responses`` objects with ``API_call_n`` placeholders, ``"UNK"`` for missing required
    values); ``prompt_template`` replaces it (markers ``{apis}``, ``{task}``; see
    :mod:`toolmend.benchmarks.nestools._prompt`). The candidate list is our own (the official
    one is not public): gold tools plus ``distractors`` embedding-nearest tools per gold tool
    from the other samples, Levenshtein-filtered, shuffled with ``seed``. ``encoder`` embeds
    tools (default: :class:`toolmend.compare.Embedder`, the bundled MiniLM).

    ``compat`` reproduces the official ``evaluation/`` code, counts and quirks included:
    greedy alignment in prediction order keyed on ``api_id`` by ``==`` (a string id never
    matches), ROUGE-L (``rouge==1.0.1`` semantics) with date normalisation for strings, nested
    credit only through a ``responses`` *dict* whose producer was already matched, a whole
    value scored 0 wherever the official value scorer fails inside it (an empty string, a
    non-string dict key, a text long enough for the ``rouge`` package's recursive LCS rebuild
    to pass Python's recursion limit), and the parse-from-first-``[``-to-last-``]``
    procedure. Checked against the official code on 91,000 answers (docs/benchmarks/nestools.md). One deviation: where the official code crashes (an unhashable
    ``api_id`` in a multi-call answer) the call simply matches nothing.

    ``improved`` keeps every definition and denominator but removes order and format
    accidents:

    1. **Optimal alignment** (Hungarian, :func:`toolmend.compare._align`) of predicted with gold
       calls of the same tool, maximising 1 + parameter score per pair, instead of
       first-come greedy — so Selection and Parameter no longer depend on the order the calls
       are written in (Order still measures that).
    2. **Nested credit without order**: a predicted placeholder earns credit when another
       predicted call *of the producer's tool* binds it at the gold return position; the
       official rule also needs that producer to have been aligned earlier in the answer.
    3. **api_id leniency**: ``"9031"`` and ``9031.0`` count as 9031; a call without a usable id
       is keyed by its ``api_name`` through the offered tools. A format error is then only a
       missing ``parameters`` object or a call with neither id nor name.
    4. ``responses`` may also be a list (the gold files' own shape), read positionally.
    5. An undefined ROUGE element (empty string) scores 0 alone instead of zeroing its list.

    ``score`` puts the per-sample counts in ``details["counts"]``; ``aggregate`` sums them
    (micro averaging — not the mean of per-sample F1s) and applies the depth filter
    (``depths``, the official ``--target_depths``). A prediction that is an empty list stands
    for an API failure (the official ``-1``): it is left out of every denominator.
    """

    load_options = ("limit", "distractors", "seed")
    """The keys ``load()`` takes (``-o KEY=VALUE`` on the command line)."""

    name = "nestools"
    default_data = "data/nestools"
    reply_format = "nestools"
    headline = "tree_pass"
    detail_keys = ("depth",)

    def __init__(
        self,
        *,
        prompt_template: str | Path | None = None,
        distractors: int = 5,
        seed: int = 0,
        encoder: TextEncoder | None = None,
        depths: Collection[int] | None = None,
    ) -> None:
        self.template = load_template(prompt_template)
        if distractors < 0:
            raise ConfigError(f"distractors must be >= 0, got {distractors}")
        self.distractors = distractors
        self.seed = seed
        self.encoder = encoder
        self.depths = set(depths) if depths is not None else None
        # Gold-side work per sample object, reused when one sample is scored many times
        # (several models, Repair@N, perturbation studies). The sample is kept alive with it
        # so that its id() cannot be reused by another object.
        self._gold: dict[int, tuple[Sample, list[dict[str, Any]], GoldPrep, dict[str, int]]] = {}
        # sample id -> the loaded set whose candidate lists it gets (the latest load wins)
        self._sets: dict[str, _CandidateSet] = {}

    def load(self, path: str | Path | None = None, **options: Any) -> list[Sample]:
        """Samples from ``path`` (default: the shared ``data/nestools``); their ``tools`` are the
        gold tools. Their candidate lists (gold + distractors) are built on first need.

        Options: ``limit`` (first n samples; the distractor pool is then those samples' tools),
        ``distractors``, ``seed`` (override the constructor's).
        """
        unknown = set(options) - {"limit", "distractors", "seed"}
        if unknown:
            raise ConfigError(f"unknown NesTools load option(s): {sorted(unknown)}")
        folder = Path(path) if path is not None else shared_dir() / self.default_data
        samples = load_nestools(folder, limit=options.get("limit"))
        k = int(options.get("distractors", self.distractors))
        if k < 0:
            raise ConfigError(f"distractors must be >= 0, got {k}")
        group = _CandidateSet(samples, k, int(options.get("seed", self.seed))) if k else None
        for s in samples:
            if group is None:
                self._sets.pop(s.id, None)
            else:
                self._sets[s.id] = group
        return samples

    def load_run(
        self, path: Path, options: dict[str, Any], *, limit: int | None = None, seed: int = 0
    ) -> list[Sample]:
        """:meth:`load` with the run's ``seed`` (the distractor shuffle) and ``limit`` (the distractor
        pool is the loaded samples' tools), unless ``options`` set them."""
        options = dict(options)
        options.setdefault("seed", seed)
        if limit is not None:
            options.setdefault("limit", limit)
        return super().load_run(path, options, limit=limit, seed=seed)

    def for_native_tools(self, samples: list[Sample]) -> list[Sample]:
        """Native function calling sends ``sample.tools``: the gold tools plus distractors."""
        return self.with_candidates(samples)

    def gold(self, sample: Sample) -> Prediction:
        """The gold chain in the official output format."""
        return to_official_output(sample)

    def reply_text(self, sample: Sample, completion: Completion) -> str:
        """Native calls in the official output format (api ids and named responses come from
        ``sample``)."""
        return write_reply(completion, "nestools", write=lambda calls: to_official_output(sample, calls))

    def candidates(self, sample: Sample) -> list[Tool]:
        """The tools offered to the model for ``sample``: for a loaded sample, its gold tools and
        distractors (built for the whole loaded set on the first call, then reused); for any
        other sample, or with ``distractors=0``, its own ``tools``."""
        group = self._sets.get(sample.id)
        if group is None or not group.holds(sample):
            return list(sample.tools)
        return group.tools(sample, self._encoder())

    def with_candidates(self, samples: Sequence[Sample]) -> list[Sample]:
        """Copies of ``samples`` whose ``tools`` are their candidate lists (what a backend's
        native tool-calling should be given), ``metadata["distractors"]`` the number added.
        Samples that did not come from :meth:`load` form one new set (their own pool)."""
        strangers = [s for s in samples if not (s.id in self._sets and self._sets[s.id].holds(s))]
        if strangers and self.distractors:
            group = _CandidateSet(strangers, self.distractors, self.seed)
            for s in strangers:
                self._sets[s.id] = group
        out: list[Sample] = []
        for s in samples:
            tools = self.candidates(s)
            gold = len(s.metadata.get("api_ids", s.tools))
            out.append(
                s.model_copy(
                    update={"tools": tools, "metadata": {**s.metadata, "distractors": len(tools) - gold}}
                )
            )
        return out

    def _encoder(self) -> TextEncoder:
        if self.encoder is None:
            from toolmend.compare._embed import Embedder

            self.encoder = Embedder()
        return self.encoder

    def prompt(self, sample: Sample) -> list[Message]:
        """One user message, as in the official protocol (no system prompt), listing the
        sample's :meth:`candidates`."""
        return [Message(role="user", content=render_prompt(sample, self.template, self.candidates(sample)))]

    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        """Per-sample counts (``details["counts"]``) and this sample's own ratios (``values``;
        ``None`` where a denominator is 0). Never raises on malformed output."""
        if isinstance(prediction, list):
            if not prediction:
                return SampleScore(
                    id=sample.id, values={}, details={"skipped": True, "depth": self._depth(sample)}
                )
            prediction = prediction[0]
        _, gold, prepared, name_to_id = self._prepare(sample)
        task = str(sample.metadata.get("task", ""))
        if mode == "compat":
            counts = count_compat(gold, task, prediction, prepared=prepared)
        elif mode == "improved":
            counts = count_improved(gold, task, prediction, name_to_id, prepared=prepared)
        else:
            raise ConfigError(f"unknown mode {mode!r}; expected 'compat' or 'improved'")
        values: dict[str, float | None] = {"format": counts["format"], "tree_pass": counts["tree"]}
        for p_key, r_key, correct_key, pred_key, gold_key in _PARTS:
            c, p, g = counts[correct_key], counts[pred_key], counts[gold_key]
            values[p_key] = c / p if p else None
            values[r_key] = c / g if g else None
        # Built from checked parts (str id, float values, plain dicts): skip re-validating them,
        # which would cost as much as the scoring itself.
        return SampleScore.model_construct(
            id=sample.id,
            values=values,
            details={"counts": counts, "depth": self._depth(sample), "mode": mode},
        )

    def _prepare(self, sample: Sample) -> tuple[Sample, list[dict[str, Any]], GoldPrep, dict[str, int]]:
        hit = self._gold.get(id(sample))
        if hit is not None and hit[0] is sample:
            return hit
        gold = gold_chain(sample)
        name_to_id = {t.name: t.metadata["api_id"] for t in sample.tools if "api_id" in t.metadata}
        name_to_id.update(zip(sample.metadata["api_names"], sample.metadata["api_ids"], strict=True))
        entry = (sample, gold, prepare_gold(gold), name_to_id)
        self._gold[id(sample)] = entry
        return entry

    @staticmethod
    def _depth(sample: Sample) -> int:
        return int(sample.metadata.get("depth", 0))

    def aggregate(
        self, scores: Sequence[SampleScore], mode: Mode = "compat", *, depths: Collection[int] | None = None
    ) -> dict[str, float]:
        """Micro P/R/F1 per part, ``avg_f1``, ``format``, ``tree_pass`` and error counts over the
        scored samples whose gold depth is in ``depths`` (default: the constructor's, else all).
        With ``depths == {1}`` the nest columns and the average are dropped, as officially."""
        wanted = set(depths) if depths is not None else self.depths
        kept = [
            s.details["counts"]
            for s in scores
            if not s.details.get("skipped") and (wanted is None or int(s.details.get("depth", 0)) in wanted)
        ]
        return micro_metrics(kept, nested=wanted != {1})
