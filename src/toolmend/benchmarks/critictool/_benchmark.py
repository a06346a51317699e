"""The CriticTool benchmark behind the common :class:`~toolmend.benchmarks.Benchmark` interface.

>>> import asyncio
>>> from toolmend.benchmarks.critic import build_suite
>>> bench = CriticToolBenchmark(similarity=lambda a, b: float(a == b))
>>> samples = bench.load(build_suite("world", seed=0, out=tmp_path, limit=8).root)
>>> async def generate(messages, *, epoch=None):  # any model; here: always give up
...     return '{"name": "FinishAction", "args": "I cannot help."}'
>>> outputs = [asyncio.run(bench.solve(s, generate)) for s in samples]
>>> 0 <= bench.aggregate([bench.score(s, o) for s, o in zip(samples, outputs)])["overall"] < 100
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from toolmend._errors import ConfigError
from toolmend._schema import Message, Sample
from toolmend._shared import shared_dir
from toolmend.benchmarks._base import BENCHMARKS, Benchmark, Generate, Mode, Prediction, SampleScore
from toolmend.benchmarks.critictool._overall import aggregate_scores
from toolmend.benchmarks.critictool._prompts import Instructions, build_prompt
from toolmend.benchmarks.critictool._records import (
    ExternalMode,
    Part,
    load_critictool,
    load_critictool_file,
)
from toolmend.benchmarks.critictool._runner import run_sample
from toolmend.benchmarks.critictool._scoring import (
    CachedSimilarity,
    SimilarityFn,
    gold_prediction,
    score_sample,
    similarity_pairs,
)

__all__ = ["CriticToolBenchmark"]


def _instructions(template: Instructions | str | None) -> Instructions:
    if template is None:
        return Instructions()
    if isinstance(template, Instructions):
        return template
    try:
        return Instructions.model_validate_json(template)
    except ValidationError as exc:
        raise ConfigError(
            "a CriticTool prompt template is a JSON object of mode instructions (internal, "
            f"internal_cot, skip, skip_cot, finish, finish_cot): {exc.errors()[0]['msg']}"
        ) from exc


_SPLITS: dict[str, tuple[Part, ...]] = {
    "all": ("internal", "external"),
    "internal": ("internal",),
    "external": ("external",),
}


@BENCHMARKS.register("critictool")
class CriticToolBenchmark(Benchmark):
    """CriticTool (Huang et al., EMNLP 2025): self-critique after internal and external tool errors.

    ``similarity`` scores argument values and thoughts (default: toolmend's sentence embedder; the
    official model is ``all-mpnet-base-v2``). ``prompt_template`` replaces the mode instructions
    (an :class:`Instructions`, or its JSON text: an object with any of ``internal``,
    ``internal_cot``, ``skip``, ``skip_cot``, ``finish``, ``finish_cot``);
    ``tool_role`` says how tool results are sent (``"user"``, as the official runner means to);
    ``retry_limit`` bounds the external retry loop (``retry_limit + 1`` generations).

    Mode ``compat`` reproduces the official scorer; ``improved`` is its strict variant that also
    gives 0 argument credit to calls with keys the gold call lacks.
    """

    load_options = ("variant", "cot", "split", "external_modes")
    """The keys ``load()`` takes (``-o KEY=VALUE`` on the command line)."""

    name = "critictool"
    default_data = "data/critictool"
    reply_format = "json"
    headline = "tool"
    summary_metric = "overall"
    metric_help = {
        "overall": "Weighted sum of detect, category, tool, args, retry, break, skip_finish_tool and "
        "skip_finish_args (weights 0.1 0.1 0.15 0.15 0.05 0.15 0.15 0.15); the number to compare critics by.",
        "detect": "Erroneous steps the critic flagged as wrong, and error-free steps it let pass.",
        "category": "Flagged errors whose error category the critic named correctly.",
        "tool": "Steps where the critic's corrected (or kept) call names the gold tool.",
        "args": "Similarity of the corrected call's arguments to the gold arguments (embedding cosine).",
        "parse_rate": "Replies that parse in CriticTool's reply format.",
        "retry": "After a transient tool failure, the critic retried the call (skip and finish modes merged).",
        "break": "After retries stopped helping, the critic stopped retrying (skip and finish merged).",
        "skip_finish_tool": "After giving up on a failing tool, the next call (skip) or the finish "
        "action (finish) is the gold one.",
        "skip_finish_args": "After skipping a failing tool, the next call's arguments match the gold ones.",
        "skip_retry": "retry, in the skip external mode only.",
        "skip_break": "break, in the skip external mode only.",
        "skip_tool": "After skipping a failing tool, the next call names the gold tool.",
        "skip_args": "skip_finish_args: the skip mode is its only source.",
        "skip_parse_rate": "parse_rate over the skip mode's replies.",
        "finish_retry": "retry, in the finish external mode only.",
        "finish_break": "break, in the finish external mode only.",
        "finish_tool": "After giving up on a failing tool, the critic finishes (the gold action).",
        "finish_parse_rate": "parse_rate over the finish mode's replies.",
    }
    detail_keys = ("part", "error_type", "external_mode", "variant")
    percent_scale = True

    def __init__(
        self,
        *,
        similarity: SimilarityFn | None = None,
        prompt_template: Instructions | str | None = None,
        tool_role: Literal["tool", "user"] = "user",
        retry_limit: int = 3,
    ) -> None:
        self._sim = CachedSimilarity(similarity)
        self.instructions = _instructions(prompt_template)
        self.tool_role: Literal["tool", "user"] = tool_role
        self.retry_limit = retry_limit

    def load(
        self,
        path: str | Path | None = None,
        *,
        variant: str | Iterable[str] = "base",
        cot: bool = False,
        split: str = "all",
        external_modes: Iterable[ExternalMode] = ("skip", "finish"),
        **options: Any,
    ) -> list[Sample]:
        """Load the official layout under ``path`` (default: the shared data folder), or one file.

        ``variant``: ``"base"``, ``"evol"``, ``"all"`` or a list; ``split``: ``"all"``,
        ``"internal"`` or ``"external"``; ``cot`` picks the ``*_w_cot`` files; each external record
        yields one sample per entry of ``external_modes``.
        """
        if options:
            raise ConfigError(f"unknown CriticTool load option(s): {', '.join(sorted(options))}")
        if split not in _SPLITS:
            raise ConfigError(f"split must be one of {', '.join(_SPLITS)}; got {split!r}")
        root = Path(path) if path is not None else shared_dir() / self.default_data
        if root.is_file():
            return load_critictool_file(root, external_modes=external_modes)
        variants = (
            ["base", "evol"] if variant == "all" else [variant] if isinstance(variant, str) else list(variant)
        )
        return load_critictool(
            root, variants=variants, cot=cot, parts=_SPLITS[split], external_modes=external_modes
        )

    def turn_feedback(self, sample: Sample) -> Message | None:
        # The retry loop answers each repeat of the failed call with the tool's error response
        # again: the prompt's last message.
        if sample.metadata.get("part") != "external":
            return None
        prompt = self.prompt(sample)
        return prompt[-1] if prompt else None

    def prompt(self, sample: Sample) -> list[Message]:
        """The sample's conversation with the mode instruction inserted into the system prompt."""
        return build_prompt(sample, self.instructions, tool_role=self.tool_role)

    async def solve(self, sample: Sample, generate: Generate) -> Prediction:
        """One reply (internal) or the retry loop's replies (external) from ``generate``."""
        return await run_sample(
            sample,
            generate,
            instructions=self.instructions,
            tool_role=self.tool_role,
            retry_limit=self.retry_limit,
        )

    def prepare(self, samples: Sequence[Sample], predictions: Sequence[Prediction] | None = None) -> None:
        """Embed, in one batch, every text pair that scoring ``predictions`` will compare.

        Scores are unchanged (the pairs are memoised, then :meth:`score` reads them back); only
        the number of model calls drops. Without ``predictions`` there is nothing to do: which
        gold values get compared depends on the replies (equal strings are never embedded).
        The pairs of mode ``compat`` include those of ``improved``, which only skips comparisons.
        """
        if predictions is None:
            return
        self._sim.warm(similarity_pairs(samples, predictions, "compat"))

    def score(self, sample: Sample, prediction: Prediction, mode: Mode = "compat") -> SampleScore:
        """Per-sample metrics; ``None`` marks a metric outside this sample's denominator."""
        return score_sample(sample, prediction, mode=mode, similarity=self._sim)

    def aggregate(self, scores: Sequence[SampleScore], mode: Mode = "compat") -> dict[str, float]:
        """Detect, Category, Tool, Args, Retry, Break, skip/finish Tool and Args, Overall (percent)."""
        return aggregate_scores(scores)

    def gold(self, sample: Sample) -> Prediction:
        """What a perfect model would reply (useful to check a pipeline end to end)."""
        return gold_prediction(sample)
