"""ToolACE-R's model-aware iterative training (Zeng et al. 2025, §3.2): ``toolmend train iterate``.

Each round, with the current checkpoint:

1. **sample** ``k`` answers per training task at ``temperature`` through toolmend's own model
   backends (``hf/<checkpoint>`` by default), and build the self-refinement samples;
2. compute the **difficulty** ``D = 1 − mean overlap`` of the samples against the gold
   (eq. 5, :mod:`toolmend.benchmarks._toolace_r`);
3. **keep** the samples with ``alpha < D < beta`` (paper: 0 and 0.9);
4. **SFT** on them (TRL's SFTTrainer through :func:`~toolmend.train.prepare`, one epoch by
   default, as in the paper), self-refinement samples mixed in;
5. **evaluate** the new checkpoint greedily on held-out tasks: exact-call accuracy (the same bag
   of calls as the gold), mean overlap (eq. 4) and schema-valid rate (a call, and no parser or
   checklist finding).

Self-refinement samples (``refine``): ``model`` (the paper's form) takes the model's own first
sampled answer as the first attempt, the ``self-refine`` strategy's re-ask with the checklist's
feedback on it (the ``refine`` builder's wording too), and the gold — or, when the attempt was
already right, the "keep it" answer — as the supervised turn; they are re-built every round from the current model, and their difficulty is
estimated the same way, in their own context. ``builder`` mixes in the ``refine`` builder's rows
(checklist-injected first attempts); ``none`` trains on the tasks alone.

A round with no sample in the band trains nothing and keeps the checkpoint. The run directory
gets ``round-N/difficulty.jsonl`` (every sample's D, its k answers and whether it was kept),
``round-N/model`` (the checkpoint) and, updated after every round, ``curves.json``,
``curves.md`` and (with matplotlib) ``curves.png``; round 0 is the starting model.

>>> cfg = IterateConfig.load({"rounds": 2, "k": 4, "sft": {"max_steps": 50}})
>>> (cfg.alpha, cfg.beta, cfg.refine, cfg.eval_set.seed)
(0.0, 0.9, 'model', 1)
>>> IterateConfig.load({"alpha": 0.5, "beta": 0.5})
Traceback (most recent call last):
...
toolmend._errors.ConfigError: iterate config: alpha must be below beta (got alpha=0.5, beta=0.5)
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolmend._errors import ConfigError, first_error
from toolmend._jsontext import dumps
from toolmend._schema import REFS, Message, ToolCall
from toolmend.benchmarks._replies import reply_text
from toolmend.benchmarks._toolace_r import calls_match, difficulty, in_band, overlap_score
from toolmend.check import Checker
from toolmend.formats import load_tools, parse_calls
from toolmend.train._data import KEEP_IT, build_rows, feedback_text
from toolmend.train._deps import require
from toolmend.train._rewards import SchemaRewardConfig, schema_score

if TYPE_CHECKING:
    from toolmend.models import Model

__all__ = ["EvalSet", "IterateConfig", "IterateResult", "RoundResult", "iterate"]

Sampler = Callable[[Path], "Model"]
"""Makes the model that samples and evaluates, from a checkpoint folder."""


class EvalSet(BaseModel):
    """The held-out tasks each round is evaluated on (tasks also in the training set are left out)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str | None = None
    """Default: the training set's source."""
    seed: int = 1
    """For ``world``, another seed is another world with other tasks (held out)."""
    offset: int = Field(0, ge=0)
    """Skip this many gold trajectories first (``nestools`` / ``bfcl``, whose tasks do not depend on
    the seed)."""
    limit: int | None = Field(50, ge=1)
    """Held-out tasks (gold trajectories); each gives one eval sample per turn."""
    max_tools: int | None = Field(None, ge=1)
    """Default: the training set's ``max_tools``."""
    data: str | None = None
    """Default: the training set's data folder."""


class IterateConfig(BaseModel):
    """Settings of :func:`iterate` (``--config FILE`` holds these keys; ``sft`` takes any TRL
    ``SFTConfig`` field)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rounds: int = Field(3, ge=1)
    """Paper: at most 3 (gains plateau after)."""
    k: int = Field(8, ge=1)
    """Sampled answers per sample for D (paper: 8)."""
    alpha: float = 0.0
    beta: float = 0.9
    temperature: float = Field(1.0, gt=0)
    max_new_tokens: int = Field(256, ge=1)
    batch_size: int = Field(16, ge=1)
    source: str = "world"
    seed: int = 0
    offset: int = Field(0, ge=0)
    """Skip this many gold trajectories first (``bfcl`` lists its multi-call categories first, so
    ``offset`` reaches ``multiple`` / ``simple_python``)."""
    limit: int | None = Field(None, ge=1)
    """Training tasks (gold trajectories) to use after ``offset``; default all."""
    max_tools: int | None = Field(None, ge=1)
    data: str | None = None
    """Data folder for ``nestools`` / ``bfcl`` (default: the shared one)."""
    refine: Literal["model", "builder", "none"] = "model"
    ground: bool = False
    """Self-refine feedback that also names the values the conversation never mentions (the
    re-ask of ``self-refine -S ground=true``)."""
    eval_set: EvalSet = Field(default_factory=EvalSet)
    sft: dict[str, Any] = Field(default_factory=dict)
    """TRL ``SFTConfig`` fields for each round's training (default: one epoch)."""
    lora: bool = False
    """Train a LoRA adapter each round and merge it into the next checkpoint."""

    @model_validator(mode="after")
    def _band(self) -> IterateConfig:
        if self.alpha >= self.beta:
            raise ValueError(f"alpha must be below beta (got alpha={self.alpha}, beta={self.beta})")
        return self

    @classmethod
    def load(cls, value: IterateConfig | dict[str, Any] | str | Path | None) -> IterateConfig:
        """From a config, a mapping or a YAML/JSON file; a bad field is one :class:`ConfigError` line."""
        if isinstance(value, IterateConfig):
            return value
        where = ""
        if isinstance(value, str | Path):
            from toolmend.train._recipes import load_config

            where, value = f"{value}: ", load_config(value)
        try:
            return cls.model_validate(value or {})
        except ValidationError as exc:
            field, msg = first_error(exc)
            what = f"iterate config field {field!r}" if field else "iterate config"
            raise ConfigError(f"{where}{what}: {msg}") from None


class RoundResult(BaseModel):
    """One point of the curves (round 0 is the starting model: nothing sampled or trained)."""

    round: int
    model: str
    samples: int = 0
    """Samples whose D was estimated (tasks plus self-refinement samples)."""
    mean_difficulty: float | None = None
    too_easy: int = 0
    """D ≤ alpha."""
    too_hard: int = 0
    """D ≥ beta."""
    kept_tasks: int = 0
    kept_refine: int = 0
    steps: int = 0
    train_loss: float | None = None
    eval_tasks: int = 0
    exact: float = 0.0
    """Exact-call accuracy on the eval set."""
    overlap: float = 0.0
    schema_valid: float = 0.0


class IterateResult(BaseModel):
    """What :func:`iterate` did: the curves and the final checkpoint."""

    out: Path
    final_model: Path
    rounds: list[RoundResult]


# -- sampling and scoring ----------------------------------------------------------------------


def _gold(row: dict[str, Any]) -> list[ToolCall]:
    return [ToolCall.model_validate(c, context=REFS) for c in json.loads(row["gold_calls"])]


def _sample(model: Model, rows: Sequence[dict[str, Any]], n: int, config: Any) -> list[list[str]]:
    """``n`` answers per row (all requests in flight at once, so the backend batches them)."""

    async def one(row: dict[str, Any], epoch: int) -> str:
        completion = await model.generate(
            [Message(role=m["role"], content=m["content"]) for m in row["prompt"]],
            tools=load_tools(json.loads(row["tools"])),
            config=config,
            epoch=epoch,
            sample_id=row["trace_id"],
        )
        # hf/ (like a server's tool parser) moves the calls it parses out of the text; write
        # them back in the rows' tags format, or every well-formed answer scores as no call.
        return reply_text(completion, "tags")

    async def run() -> list[str]:
        try:
            return await asyncio.gather(*(one(r, e) for r in rows for e in range(n)))
        finally:
            await model.aclose()

    texts = asyncio.run(run()) if rows else []
    return [texts[i * n : (i + 1) * n] for i in range(len(rows))]


def _self_refine(row: dict[str, Any], attempt: str, ground: bool = False) -> dict[str, Any]:
    """ToolACE-R's self-refinement sample: the model's own attempt, the checklist's feedback, and
    the gold (or "keep it" when the attempt was already right) as the only supervised turn."""
    gold = _gold(row)
    tools = load_tools(json.loads(row["tools"]))
    gold_text = row["completion"][0]["content"]
    right = calls_match(parse_calls(attempt).calls, gold)
    feedback = feedback_text(attempt, Checker(tools), "auto", row["prompt"] if ground else None, gold_text)
    prompt = [
        *row["prompt"],
        {"role": "assistant", "content": attempt},
        {"role": "user", "content": feedback},
    ]
    answer = KEEP_IT if right else gold_text
    return {**row, "prompt": prompt, "completion": [{"role": "assistant", "content": answer}],
            "code": "correct" if right else "model_attempt", "operator": "self_refine"}  # fmt: skip


def _evaluate(rows: Sequence[dict[str, Any]], texts: Sequence[str]) -> dict[str, float]:
    if not rows:
        return {"exact": 0.0, "overlap": 0.0, "schema_valid": 0.0}
    best = SchemaRewardConfig().max_reward
    exact = overlap = valid = 0.0
    for row, text in zip(rows, texts, strict=True):
        gold, pred = _gold(row), parse_calls(text).calls
        exact += calls_match(pred, gold)
        overlap += overlap_score(pred, gold)
        valid += schema_score(text, row["tools"], expected_count=len(gold)) == best
    n = len(rows)
    return {"exact": exact / n, "overlap": overlap / n, "schema_valid": valid / n}


# -- curves --------------------------------------------------------------------------------------

_COLUMNS = ("round", "samples", "mean_difficulty", "too_easy", "too_hard", "kept_tasks", "kept_refine",
            "steps", "train_loss", "exact", "overlap", "schema_valid")  # fmt: skip


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def curves_table(rounds: Sequence[RoundResult]) -> str:
    """The curves as a Markdown table."""
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    for r in rounds:
        lines.append("| " + " | ".join(_cell(getattr(r, c)) for c in _COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def _write_curves(out: Path, config: IterateConfig, rounds: list[RoundResult]) -> None:
    data = {"config": config.model_dump(mode="json"), "rounds": [r.model_dump(mode="json") for r in rounds]}
    (out / "curves.json").write_text(dumps(data, indent=2) + "\n", encoding="utf-8")
    (out / "curves.md").write_text(curves_table(rounds), encoding="utf-8")
    try:
        # A bare Figure: no pyplot, so no global backend switch in the caller's process.
        from matplotlib.figure import Figure
    except ImportError:  # the viz extra is optional: the JSON and the table are the record
        return
    xs = [r.round for r in rounds]
    fig = Figure(figsize=(9, 3.2))
    left, right = fig.subplots(1, 2)
    for key in ("exact", "overlap", "schema_valid"):
        left.plot(xs, [getattr(r, key) for r in rounds], marker="o", label=key)
    left.set(xlabel="round", ylabel="eval", ylim=(-0.02, 1.02), title="held-out tasks")
    left.legend(fontsize=8)
    right.bar([x - 0.2 for x in xs], [r.kept_tasks for r in rounds], width=0.4, label="kept tasks")
    right.bar([x + 0.2 for x in xs], [r.kept_refine for r in rounds], width=0.4, label="kept refine")
    right.set(xlabel="round", ylabel="samples", title=f"{config.alpha} < D < {config.beta}")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.set_xticks(xs)
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=100)


# -- the loop --------------------------------------------------------------------------------------


def _hf_sampler(config: IterateConfig) -> Sampler:
    def make(checkpoint: Path) -> Model:
        from toolmend.models import get_model

        return get_model(f"hf/{checkpoint}", cache=False, batch_size=config.batch_size,
                         max_new_tokens=config.max_new_tokens)  # fmt: skip

    return make


def _train_round(
    model: Path, rows: list[dict[str, Any]], out: Path, config: IterateConfig
) -> tuple[int, float | None]:
    from datasets import Dataset

    from toolmend.train._recipes import prepare

    dataset = Dataset.from_list([{k: r[k] for k in ("prompt", "completion", "tools")} for r in rows])
    options = {"num_train_epochs": 1, "seed": config.seed, **config.sft}
    prepared = prepare("sft", model=model, data=dataset, out=out, lora=config.lora, config=options)
    trainer = prepared.trainer
    trainer.train()
    trained = trainer.model.merge_and_unload() if config.lora else trainer.model
    trained.save_pretrained(str(out))
    trainer.processing_class.save_pretrained(str(out))
    log = trainer.state.log_history
    loss = next(
        (e.get("train_loss", e.get("loss")) for e in reversed(log) if "loss" in e or "train_loss" in e), None
    )
    return int(trainer.state.global_step), (float(loss) if loss is not None else None)


def iterate(
    model: str | Path,
    out: str | Path,
    config: IterateConfig | dict[str, Any] | str | Path | None = None,
    *,
    sampler: Sampler | None = None,
    log: Callable[[str], None] | None = None,
) -> IterateResult:
    """Run ToolACE-R's model-aware iterative training from ``model`` into the run folder ``out``
    (see the module docstring). ``sampler`` makes the sampling/evaluation model from a checkpoint
    (default: toolmend's ``hf/`` backend); ``log`` gets one line per step.

    Everything is checked before the first sample is drawn: the config, the ``train`` extra, the
    model folder, and that the training and held-out eval sets are not empty.
    """
    cfg = IterateConfig.load(config)
    require()
    from toolmend.train._recipes import _model_dir

    current = _model_dir(model)
    say = log or (lambda _line: None)
    sample = sampler or _hf_sampler(cfg)

    def training_rows(kind: str) -> list[dict[str, Any]]:
        return build_rows(kind, source=cfg.source, seed=cfg.seed, limit=cfg.limit, max_tools=cfg.max_tools,
                          data=cfg.data, ground=cfg.ground and kind == "refine", offset=cfg.offset)[0]  # fmt: skip

    tasks = training_rows("sft")
    if not tasks:
        raise ConfigError(f"no training tasks could be built from {cfg.source!r}")
    builder_refine = training_rows("refine") if cfg.refine == "builder" else []
    ev = cfg.eval_set
    eval_source = ev.source or cfg.source
    eval_rows, _ = build_rows(
        "sft",
        source=eval_source,
        seed=ev.seed,
        limit=ev.limit,
        offset=ev.offset,
        max_tools=ev.max_tools or cfg.max_tools,
        data=ev.data or (cfg.data if eval_source == cfg.source else None),
    )
    # Tasks also trained on are no test; for the world, the id names the seed too.
    train_ids = {(r["source"], r["trace_id"]) for r in tasks}
    eval_rows = [r for r in eval_rows if (r["source"], r["trace_id"]) not in train_ids]
    if not eval_rows:
        raise ConfigError(
            f"the eval set ({eval_source}, seed {ev.seed}, offset {ev.offset}) has no task outside the "
            "training set; pick another eval seed (world), an offset past the training tasks, or another source"
        )
    from toolmend.models import GenerateConfig

    greedy = GenerateConfig(max_tokens=cfg.max_new_tokens)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say(f"{len(tasks)} training tasks ({cfg.source}), {len(eval_rows)} held-out eval tasks ({eval_source})")

    def evaluate(round_no: int, checkpoint: Path, **fields: Any) -> RoundResult:
        texts = [t[0] for t in _sample(sample(checkpoint), eval_rows, 1, greedy)]
        scores = _evaluate(eval_rows, texts)
        result = RoundResult(
            round=round_no, model=str(checkpoint), eval_tasks=len(eval_rows), **scores, **fields
        )
        say(f"round {round_no}: exact {scores['exact']:.3f}, overlap {scores['overlap']:.3f}, "
            f"schema-valid {scores['schema_valid']:.3f}")  # fmt: skip
        return result

    rounds = [evaluate(0, current)]
    _write_curves(out, cfg, rounds)
    for round_no in range(1, cfg.rounds + 1):
        rdir = out / f"round-{round_no}"
        rdir.mkdir(exist_ok=True)
        sampling = GenerateConfig(temperature=cfg.temperature, max_tokens=cfg.max_new_tokens,
                                  seed=cfg.seed * 1000 + round_no)  # fmt: skip
        answers = _sample(sample(current), tasks, cfg.k, sampling)
        if cfg.refine == "model":
            refine = [_self_refine(row, a[0], cfg.ground) for row, a in zip(tasks, answers, strict=True)]
        else:
            refine = list(builder_refine)
        refine_answers = _sample(sample(current), refine, cfg.k, sampling)
        scored = [(r, a, "task") for r, a in zip(tasks, answers, strict=True)]
        scored += [(r, a, "refine") for r, a in zip(refine, refine_answers, strict=True)]
        kept: list[dict[str, Any]] = []
        ds: list[float] = []
        counts = {"task": 0, "refine": 0}
        with (rdir / "difficulty.jsonl").open("w", encoding="utf-8") as f:
            for row, texts, part in scored:
                d = difficulty(_gold(row), [parse_calls(t).calls for t in texts])
                keep = in_band(d, cfg.alpha, cfg.beta)
                ds.append(d)
                if keep:
                    kept.append(row)
                    counts[part] += 1
                record = {
                    "trace_id": row["trace_id"],
                    "part": part,
                    "difficulty": d,
                    "kept": keep,
                    "answers": texts,
                }
                f.write(dumps(record) + "\n")
        say(f"round {round_no}: {len(ds)} samples, kept {counts['task']} tasks + {counts['refine']} refine "
            f"({cfg.alpha} < D < {cfg.beta})")  # fmt: skip
        steps, loss = 0, None
        if kept:
            random.Random(cfg.seed * 1000 + round_no).shuffle(kept)
            steps, loss = _train_round(current, kept, rdir / "model", cfg)
            current = rdir / "model"
        rounds.append(
            evaluate(
                round_no,
                current,
                samples=len(ds),
                mean_difficulty=sum(ds) / len(ds) if ds else None,
                too_easy=sum(d <= cfg.alpha for d in ds),
                too_hard=sum(d >= cfg.beta for d in ds),
                kept_tasks=counts["task"],
                kept_refine=counts["refine"],
                steps=steps,
                train_loss=loss,
            )
        )
        _write_curves(out, cfg, rounds)
    return IterateResult(out=out, final_model=current, rounds=rounds)
