"""Proof on this CPU that toolmend's training recipes learn (issue 14, part 5). Not a timed test.

There are no pretrained weights on this machine, so the model is trained **from scratch**: a
tokenizer trained here on the task text, and a small Llama-architecture model. It is a small
from-scratch model, not an LLM; read its numbers as "the recipe moves the metric", nothing more.

Task: the first step of the built-in world's tasks (`toolmend bench world`), with the tools of the
task's domains plus 3 distractors (`-o tools=domain`), sent as native tools and rendered compactly
by this model's chat template. Training uses world seeds ``--train-seeds``; evaluation runs
`toolmend bench world` with the ``hf/`` backend on the held-out world seeds ``--eval-seeds`` (other
people, contacts, files, dates), one turn per task (``-o max_turns=1``). Replies are greedy unless
``--eval-temperature`` samples them (docs/benchmarks.md reports greedy on world 1000 and sampled
at 1.0 on worlds 1000-1002).

* **exact-call**: the first reply's calls equal the gold first-turn calls (names and arguments,
  as a multiset; the world's first turn can hold several independent calls).
* **schema-valid**: the first reply parses, has a call, and the checklist finds nothing wrong
  against the offered tools (the findings the self-refine strategy would show).
* **recovery** (self-refine, one re-ask with the checker's feedback): of the tasks whose first
  reply was not exact, the share whose reply after the re-ask is exact; ``broken`` is the share of
  exact first replies that the re-ask made wrong. The sft and refine checkpoints are also
  evaluated under ``-S when=findings`` (the re-ask only for a reply the checker faults).
  ``--ground`` adds the grounding check to the re-ask (``-S ground=true``) and to the refine
  rows built from the model's own attempts; ``--accept no_worse`` passes ``-S accept=no_worse``.

The second stages are model-aware (ToolACE-R): stage ``own`` has the SFT model answer training
tasks (greedy and sampled), and KTO, GRPO and refine-SFT build on those answers.

Stages (each reads the previous one's checkpoint, per model seed, and records its results in
``RUN/results.json``; rerun a stage to resume):

    data    datasets from `toolmend.train.build_rows` (sft, kto, refine) and the tokenizer
    sft     from-scratch SFT (`toolmend.train.prepare("sft")`) until --cpu-minutes of process CPU time:
            the first --short-minutes on short rows (the request and its calls, without the system
            prompt and the tool list), the rest on whole rows
    sft-eval  evaluate the SFT checkpoint again (e.g. after changing --eval-per-template)
    reeval  evaluate every checkpoint of the seed again with the current evaluation options
    own     the SFT model's greedy answer and 4 samples for each task of --own-seeds (training tasks,
            or world seeds outside --train-seeds, which the SFT model never saw); --own-model
            names another checkpoint (kto: what KTO changed on the prompts it trained on)
    kto     HiTEC-KTO from the SFT model, injected plus the model's own rejected answers, each cut
            after its first token that differs from the gold -> schema-valid
    grpo    GRPO (schema + call-match rewards) on the tasks the model sometimes gets right -> exact-call
    refine  refine-SFT (ToolACE-R data, the model's own attempts first) -> recovery after a re-ask
    docs    the table for docs/benchmarks.md

    python benchmarks/learning_check.py --run-dir runs/learning --seeds 0,1,2 --stage all
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DISTRACTORS = 3
EVAL_PER_TEMPLATE = 2
"""Held-out tasks per world template (43 templates): 2 gives 86 tasks, so one task is 1.2 points."""

MAX_NEW_TOKENS = 256
"""Room for the longest first turn (three calls, about 150 tokens): a reply cut short by the
harness would count as a format error of the model."""

CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>tools\n{% for t in tools %}{% set f = t.function if t.function is defined else t %}"
    "{{ f.name }}({% for k, v in f.parameters.properties.items() %}{{ k }}"
    "{% if f.parameters.required is defined and k in f.parameters.required %}*{% endif %}"
    "{% if v.enum is defined %}={{ v.enum|join('|') }}{% endif %}{% if not loop.last %}, {% endif %}{% endfor %})\n"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}"
    "{% generation %}{{ m.content }}<|im_end|>{% endgeneration %}{% else %}{{ m.content }}<|im_end|>{% endif %}\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML with a compact tool list (``name(param*, unit=a|b)``, * = required): a model trained
from scratch must attend over the whole prompt, so the prompt is kept short."""

PRE_TOKENIZE = r"\s|\d|[^\w\s]|[A-Za-z_]+|\w"
"""Words, single digits, single spaces and punctuation: a value is the same tokens in the query
and inside a JSON call (no ``" Madrid"`` vs ``"Madrid"``), so copying it is a token-for-token copy."""


# -- data -----------------------------------------------------------------------------------------


def _tasks(seeds: list[int]) -> dict[str, Any]:
    from toolmend.world import generate_tasks

    return {t.id: t for s in seeds for t in generate_tasks(s)}


def first_turn(task: Any) -> list[Any]:
    """The gold calls of the task's first turn (those that depend on no other call)."""
    return [c for c, level in zip(task.calls, task.levels, strict=True) if level == 0]


@contextlib.contextmanager
def first_turn_traces(tasks: dict[str, Any]) -> Iterator[None]:
    """Make the dataset builders read world traces cut to their first turn, offering the tools
    `toolmend bench world -o tools=domain` offers. The evaluation scores the first reply only
    (``-o max_turns=1``), so the training rows are the first turns too: the calls that need no
    earlier result. (Full traces give one row per turn, with the earlier results in the prompt.)"""
    import toolmend.train._data as data
    from toolmend.benchmarks.critic._traces import Trace

    real = data.load_traces

    def load(source: str, seed: int = 0, data: Any = None) -> list[Any]:
        out = []
        for trace in real(source, seed=seed, data=data):
            task = tasks[trace.id]
            out.append(Trace(trace.id, trace.query, task.offered_tools(DISTRACTORS), first_turn(task),
                             trace.source, trace.factory))  # fmt: skip
        return out

    data.load_traces = load  # type: ignore[assignment]
    try:
        yield
    finally:
        data.load_traces = real  # type: ignore[assignment]


def _system(seed: int) -> dict[str, str]:
    from toolmend.world._rl import system_prompt

    return {"role": "system", "content": system_prompt(seed, tools=False)}


def _world_rows(kind: str, seed: int) -> tuple[list[dict[str, Any]], Any]:
    """``build_rows(kind, source="world", seed=seed)`` on first turns, each prompt led by the system prompt."""
    from toolmend.train import build_rows

    built, report = build_rows(kind, source="world", seed=seed)
    for row in built:
        row["prompt"] = [_system(seed), *row["prompt"]]
    return built, report


def build_data(
    run: Path, train_seeds: list[int], kto_seeds: list[int], refine_seeds: list[int]
) -> dict[str, Any]:
    tasks = _tasks(sorted(set(train_seeds) | set(kto_seeds) | set(refine_seeds)))
    out: dict[str, Any] = {"reports": {}}
    rows: dict[str, list[dict[str, Any]]] = {"sft": [], "kto": [], "refine": []}
    with first_turn_traces(tasks):
        for kind, seeds in (("sft", train_seeds), ("kto", kto_seeds), ("refine", refine_seeds)):
            for s in seeds:
                built, report = _world_rows(kind, s)
                out["reports"][f"{kind}:{s}"] = report.model_dump(
                    include={"rows", "traces", "dropped", "codes"}
                )
                rows[kind] += built
    for kind, kind_rows in rows.items():
        _write_jsonl(run / "data" / f"{kind}.jsonl", kind_rows)
        out[kind] = len(kind_rows)
    return out


def short_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row without the system prompt and the tool list: the request and the calls it asks for."""
    return {**row, "prompt": [m for m in row["prompt"] if m["role"] != "system"], "tools": "[]"}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_tokenizer(run: Path, vocab: int) -> Path:
    """A BPE tokenizer trained on every text of the datasets, saved with the chat template."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts: list[str] = []
    for kind in ("sft", "kto", "refine"):
        for row in _read_jsonl(run / "data" / f"{kind}.jsonl"):
            texts += [m["content"] for m in [*row["prompt"], *row["completion"]]]
            texts.append(row["tools"])
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(PRE_TOKENIZE), behavior="isolated"),
         pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )  # fmt: skip
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)  # fmt: skip
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token="<|im_start|>")  # fmt: skip
    fast.chat_template = CHAT_TEMPLATE
    path = run / "tokenizer"
    fast.save_pretrained(path)
    return path


def new_model(run: Path, seed: int, out: Path, size: dict[str, int]) -> Path:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(run / "tokenizer")
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=size["d"], intermediate_size=size["ff"],
        num_hidden_layers=size["layers"], num_attention_heads=size["heads"], num_key_value_heads=size["heads"],
        max_position_embeddings=1024, tie_word_embeddings=True, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    model = LlamaForCausalLM(config)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


# -- training -------------------------------------------------------------------------------------


def _budget_callback(cpu_seconds: float, peak_lr: float, warmup: int, floor: float = 0.1) -> Any:
    """Stops training after ``cpu_seconds`` of process CPU time (the machine is shared, so wall
    time would measure the neighbours) and sets the learning rate on a cosine over that budget."""
    from transformers import TrainerCallback

    class Budget(TrainerCallback):
        start = 0.0
        used = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.start = time.process_time()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.used = time.process_time() - self.start
            frac = min(1.0, self.used / cpu_seconds)
            lr = peak_lr * min(1.0, (state.global_step + 1) / warmup)
            lr *= floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * frac))
            for group in kw["optimizer"].param_groups:
                group["lr"] = lr
            if frac >= 1.0:
                control.should_training_stop = True

    return Budget()


def run_recipe(kind: str, model: Path, rows: list[dict[str, Any]], out: Path, cpu_seconds: float,
               config: dict[str, Any], peak_lr: float, warmup: int = 20,
               rewards: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    from datasets import Dataset

    from toolmend.train import prepare

    config = {"learning_rate": peak_lr, "lr_scheduler_type": "constant", "max_steps": 100_000,
              "logging_steps": 10, "disable_tqdm": True, **config}  # fmt: skip
    if kind == "sft":
        # Batches of similar lengths: padding a batch to its longest row would waste ~40 % of the compute.
        config.setdefault("train_sampling_strategy", "group_by_length")
    prepared = prepare(
        kind, model=model, data=Dataset.from_list(rows), out=out, config=config, rewards=rewards
    )
    budget = _budget_callback(cpu_seconds, peak_lr, warmup)
    trainer = prepared.trainer
    trainer.add_callback(budget)
    trainer.train()
    trainer.save_model(str(out))
    trainer.processing_class.save_pretrained(str(out))
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    return {
        "steps": int(trainer.state.global_step),
        "cpu_s": round(budget.used, 1),
        "rows_seen": int(trainer.state.global_step) * int(config.get("per_device_train_batch_size", 8)),
        "first_loss": logs[0]["loss"] if logs else None,
        "last_loss": logs[-1]["loss"] if logs else None,
        **(
            {"cut_count": trainer.cut_count, "desirable_weight": trainer.args.desirable_weight}
            if kind == "kto"
            else {}
        ),  # fmt: skip
    }


# -- evaluation -----------------------------------------------------------------------------------


def evaluate(model: Path, eval_seeds: list[int], runs: Path, strategy: str | None = None, threads: int = 2,
             per_template: int = EVAL_PER_TEMPLATE, max_new_tokens: int = MAX_NEW_TOKENS,
             temperature: float = 0.0, strategy_options: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """`toolmend bench world` with the hf/ backend on each held-out world of ``eval_seeds``, one turn
    per task; the metrics pooled over their tasks. ``temperature`` > 0 samples every reply (with the
    world's seed as the generation seed). ``strategy_options`` go to ``-S`` (``when=findings``)."""
    runs_seen = [_evaluate_one(model, s, runs, strategy, threads, per_template, max_new_tokens, temperature,
                               strategy_options) for s in eval_seeds]  # fmt: skip
    per_sample = {k: v for r in runs_seen for k, v in r["per_sample"].items()}
    first = {k: v for r in runs_seen for k, v in r["first_per_sample"].items()}
    valid = sum(r["schema_valid"] * r["n"] for r in runs_seen)
    first_valid = sum(r["first_schema_valid"] * r["n"] for r in runs_seen)
    n = len(per_sample)
    return {"run_dir": [r["run_dir"] for r in runs_seen], "wall_s": round(sum(r["wall_s"] for r in runs_seen), 1),
            "n": n, "exact": sum(per_sample.values()) / n, "schema_valid": valid / n,
            "first_exact": sum(first.values()) / n, "first_schema_valid": first_valid / n,
            "temperature": temperature, "eval_seeds": eval_seeds,
            "per_sample": per_sample, "first_per_sample": first}  # fmt: skip


def _evaluate_one(model: Path, eval_seed: int, runs: Path, strategy: str | None, threads: int, per_template: int,
                  max_new_tokens: int, temperature: float, strategy_options: tuple[str, ...]) -> dict[str, Any]:  # fmt: skip
    from toolmend.world import generate_tasks

    data = runs / f"tasks-{eval_seed}-{per_template}.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    tasks = generate_tasks(eval_seed, per_template=per_template)
    data.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    cmd = [sys.executable, "-m", "toolmend", "bench", "world", "--model", f"hf/{model}", "--data", str(data),
           "--seed", str(eval_seed), "--tool-mode", "native", "-o", "tools=domain",
           "-o", f"distractors={DISTRACTORS}", "-o", "max_turns=1", "-M", "batch_size=64", "-M", f"max_new_tokens={max_new_tokens}",
           "--max-connections", "256", "--no-cache", "--no-report", "--runs-dir", str(runs), "--json"]  # fmt: skip
    if strategy:
        cmd += ["--strategy", strategy, "--max-refine", "1"]
        cmd += [arg for option in strategy_options for arg in ("-S", option)]
    if temperature > 0:
        cmd += ["--temperature", str(temperature)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"toolmend bench failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    summary = json.loads(proc.stdout)
    metrics = first_step_metrics(Path(summary["run_dir"]), {t.id: t for t in tasks})
    return {"run_dir": summary["run_dir"], "wall_s": round(time.time() - t0, 1), **metrics}


def _call_key(calls: list[Any]) -> list[str]:
    return sorted(
        json.dumps({"name": c.name, "arguments": c.arguments}, sort_keys=True, default=str) for c in calls
    )


def judge(text: str, gold: list[Any], tools: list[Any]) -> tuple[bool, list[str]]:
    """Whether ``text`` makes exactly the ``gold`` calls, and the checklist's codes against
    ``tools`` (``["no_call"]`` when it holds no call): the evaluation's two metrics for one reply."""
    from toolmend.check import Checker
    from toolmend.guard._reask import turn_findings
    from toolmend.strategies._reply import read_reply

    turn = read_reply(text, "tags")
    if not turn.calls:
        return False, ["no_call"]
    codes = [str(f.code) for f in turn_findings(turn, Checker(tools))]
    return _call_key(turn.tool_calls()) == _call_key(gold), codes


def first_step_metrics(run_dir: Path, tasks: dict[str, Any]) -> dict[str, Any]:
    """exact-call and schema-valid of each task's reply (see the module docstring). The run has one
    turn per task, so the turn's reply is the last model output: the first reply in a plain run,
    the reply after the re-ask under self-refine (at a fixed point the last output makes the same
    calls as the one the strategy returns; after a "keep it" reply, the reply it kept). ``first_*``
    judge the first output, the reply before any re-ask. A re-ask that ``-S accept=no_worse``
    refused (event ``stop: "worse"``) leaves the reply before it."""
    from toolmend.guard._reask import is_keep
    from toolmend.runs import load_run

    exact: dict[str, bool] = {}
    valid: dict[str, bool] = {}
    first: dict[str, bool] = {}
    first_valid: dict[str, bool] = {}
    for record in load_run(run_dir).records:
        task = tasks[record.id]
        gold, tools = first_turn(task), task.offered_tools(DISTRACTORS)
        outputs = list(record.outputs)
        first[record.id], codes = judge(outputs[0] if outputs else "", gold, tools)
        first_valid[record.id] = not codes
        if any(e.get("stop") == "worse" for e in record.events if e.get("kind") == "self-refine"):
            outputs.pop()  # -S accept=no_worse kept the reply before the last re-ask
        while len(outputs) > 1 and is_keep(outputs[-1]):
            outputs.pop()
        exact[record.id], codes = judge(outputs[-1] if outputs else "", gold, tools)
        valid[record.id] = not codes
    n = len(exact)
    return {"n": n, "exact": sum(exact.values()) / n, "schema_valid": sum(valid.values()) / n, "per_sample": exact,
            "first_schema_valid": sum(first_valid.values()) / n, "first_per_sample": first}  # fmt: skip


def recovery(plain: dict[str, bool], refined: dict[str, bool]) -> dict[str, float | None]:
    """Of the wrong first replies, the share exact after the re-ask; of the exact ones, the share
    broken. Both come from one self-refine run (its first output and its final reply), so a sampled
    first reply is compared with its own refinement."""
    wrong = [k for k, ok in plain.items() if not ok]
    right = [k for k, ok in plain.items() if ok]
    return {
        "recovery": sum(refined[k] for k in wrong) / len(wrong) if wrong else None,
        "broken": sum(not refined[k] for k in right) / len(right) if right else None,
    }


# -- the model's own answers (ToolACE-R's model-aware step) --------------------------------------

OWN_SAMPLES = 4
"""Answers sampled per training task at temperature 1.0, besides the greedy one."""


def own_answers(
    model: Path, rows: list[dict[str, Any]], k: int, max_new_tokens: int, seed: int
) -> list[dict[str, Any]]:
    """The model's greedy answer (the one the evaluation sees) and ``k`` sampled answers to each
    training row, each judged as the evaluation judges a reply."""
    from toolmend._schema import ToolCall
    from toolmend.formats import load_tools
    from toolmend.models import GenerateConfig, get_model
    from toolmend.train._iterate import _sample

    def hf() -> Any:
        return get_model(f"hf/{model}", cache=False, batch_size=64, max_new_tokens=max_new_tokens)

    greedy = _sample(hf(), rows, 1, GenerateConfig(max_tokens=max_new_tokens))
    sampled = _sample(hf(), rows, k, GenerateConfig(temperature=1.0, max_tokens=max_new_tokens, seed=seed))
    out = []
    for row, first, more in zip(rows, greedy, sampled, strict=True):
        gold = [ToolCall.model_validate(c) for c in json.loads(row["gold_calls"])]
        tools = load_tools(json.loads(row["tools"]))
        answers = []
        for text in [*first, *more]:
            exact, codes = judge(text, gold, tools)
            answers.append({"text": text, "exact": exact, "codes": codes})
        out.append({"row": row, "greedy": answers[0], "samples": answers[1:]})
    return out


CALL_BLOCK = "<tool_call>"


def splice_at_finding(text: str, gold_text: str, tools: list[Any]) -> tuple[str, str] | None:
    """``text`` with the calls before its first faulted call replaced by the gold's: the model's
    own mistake after a right prefix, so that a cut at the first token that differs from the gold
    lands in the faulted call, not on an earlier wrong value. ``(spliced, code)`` when the spliced
    answer still has a finding (verified again), else ``None``."""
    from toolmend.check import Checker
    from toolmend.guard._reask import turn_findings
    from toolmend.strategies._reply import read_reply

    checker = Checker(tools)
    faulted = [f.call for f in turn_findings(read_reply(text, "tags"), checker) if f.call is not None]
    if not faulted:
        return None
    k = min(faulted)
    blocks, gold = text.split(CALL_BLOCK), gold_text.split(CALL_BLOCK)
    if k + 1 >= len(blocks) or k + 1 > len(gold):
        return None
    spliced = CALL_BLOCK.join(gold[: k + 1] + blocks[k + 1 :])
    codes = [str(f.code) for f in turn_findings(read_reply(spliced, "tags"), checker)]
    return (spliced, codes[0]) if codes else None


def own_kto_rows(
    own: list[dict[str, Any]], splice: bool = False, desirable: str = "gold"
) -> list[dict[str, Any]]:
    """Model-aware HiTEC-KTO rows: the model's own answers that the checklist rejects are
    undesirable (verified: each has a finding), the gold of the same task desirable. The injected
    negatives teach the HiTEC error list; these teach the mistakes this model makes. ``splice``
    puts each negative's faulted calls after the gold's right ones (:func:`splice_at_finding`).
    ``desirable="own"`` labels with the checklist alone, as KTO's binary feedback on the model's
    own outputs: the desirable rows of a task are its distinct answers that the checklist passes
    (right or not; as many as it has negatives, in the order sampled), the gold only when it has
    none."""
    from toolmend.formats import load_tools

    rows = []
    for item in own:
        row = item["row"]
        bad = {a["text"]: a["codes"][0] for a in [item["greedy"], *item["samples"]] if a["codes"]}
        if splice:
            tools = load_tools(json.loads(row["tools"]))
            gold_text = row["completion"][0]["content"]
            bad = dict(filter(None, (splice_at_finding(text, gold_text, tools) for text in bad)))
        if not bad:
            continue
        good = [row["completion"]]
        if desirable == "own":
            passed = dict.fromkeys(a["text"] for a in [item["greedy"], *item["samples"]] if not a["codes"])
            good = [[{"role": "assistant", "content": text}] for text in passed][: len(bad)] or good
        rows += [{"prompt": row["prompt"], "completion": completion, "tools": row["tools"],
                  "label": True, "code": "correct"} for completion in good]  # fmt: skip
        rows += [{"prompt": row["prompt"], "completion": [{"role": "assistant", "content": text}],
                  "tools": row["tools"], "label": False, "code": code} for text, code in bad.items()]  # fmt: skip
    return rows


def own_refine_rows(
    own: list[dict[str, Any]], wrong_clean: float = 0.0, ground: bool = False
) -> list[dict[str, Any]]:
    """ToolACE-R self-refinement rows from the model's own attempts, each followed by the
    self-refine strategy's re-ask: an attempt the checker finds fault with leads to the gold,
    an exact attempt to the "keep it" reply (what the re-ask asks for). An attempt that is wrong but
    passes the check is left out: its feedback says nothing is wrong, so a rewrite there teaches
    the model to rewrite answers the check passes, right ones included. (On the from-scratch
    model, leaving them out did not lower how often it broke exact replies: docs/benchmarks.md.)
    ``wrong_clean`` > 0 keeps up to that many of them per exact attempt, answered with the gold
    (the first ones in task order). ``ground``: the re-ask of ``-S ground=true``, which also names
    the values the request never mentions, so a wrong value the schema passes gets feedback too."""
    from toolmend.check import Checker
    from toolmend.formats import load_tools
    from toolmend.guard import Turn
    from toolmend.guard._reask import refine_reask
    from toolmend.train._data import KEEP_IT, feedback_findings

    rows = []
    for item in own:
        row = item["row"]
        checker = Checker(load_tools(json.loads(row["tools"])))
        seen: set[str] = set()
        context, gold = (row["prompt"] if ground else None), row["completion"][0]["content"]
        for a in [item["greedy"], *item["samples"]]:
            if a["text"] in seen:
                continue  # a repeated answer: its row is written once
            turn = Turn.from_text(a["text"], "tags")
            # One set of findings gives both the feedback and the row's code.
            found = feedback_findings(turn, checker, context=context, gold=gold)
            codes = a["codes"] or ([str(f.code) for f in found] if ground else [])
            if not (a["exact"] or codes or wrong_clean > 0):
                continue
            seen.add(a["text"])
            answer = KEEP_IT if a["exact"] else gold
            rows.append({"prompt": [*row["prompt"], {"role": "assistant", "content": a["text"]},
                                    {"role": "user", "content": refine_reask(turn, checker, found=found)}],
                         "completion": [{"role": "assistant", "content": answer}], "tools": row["tools"],
                         "code": "correct" if a["exact"] else (codes or ["wrong_value"])[0]})  # fmt: skip
    limit = int(wrong_clean * sum(r["code"] == "correct" for r in rows))
    dropped = set([i for i, r in enumerate(rows) if r["code"] == "wrong_value"][limit:])
    return [r for i, r in enumerate(rows) if i not in dropped]


def in_band(item: dict[str, Any]) -> bool:
    """A task the model sometimes gets exact and sometimes not (ToolACE-R's α < D < β with the
    band open at both ends): every GRPO group on it has a reward to learn from."""
    hits = sum(a["exact"] for a in item["samples"])
    return 0 < hits < len(item["samples"])


# -- stages ---------------------------------------------------------------------------------------

ROWS_PER_CPU_S = 8
"""Rows handed to a trainer per CPU-second of its budget: more than it can reach (about 5 per
CPU-second here), so that tokenizing rows it never sees costs little."""

SIZE = {"d": 128, "ff": 384, "layers": 2, "heads": 4}


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")


def _strip_train(result: dict[str, Any]) -> dict[str, Any]:
    """What an earlier SFT checkpoint reached, kept when training goes on."""
    return {"cpu_s": result["train"]["cpu_s"], "steps": result["train"]["steps"],
            "exact": result["eval"]["exact"], "schema_valid": result["eval"]["schema_valid"],
            "recovery": result.get("recovery")}  # fmt: skip


def _strip(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if not k.endswith("per_sample")}


def two_phase(init: Path, short: list[dict[str, Any]], whole: list[dict[str, Any]], out: Path, short_s: float,
              whole_s: float, config: dict[str, Any], peak_lr: float, warmup: int) -> dict[str, Any]:  # fmt: skip
    """SFT for ``short_s`` CPU-seconds on the short form of ``short`` (into ``out``-short), then
    for ``whole_s`` on ``whole`` (into ``out``); the two phases' records summed."""
    if not short_s:
        return run_recipe("sft", init, whole, out, whole_s, config, peak_lr=peak_lr, warmup=warmup)
    first_out = out.with_name(out.name + "-short")
    first = run_recipe("sft", init, [short_row(r) for r in short], first_out, short_s, config,
                       peak_lr=peak_lr, warmup=warmup)  # fmt: skip
    second = run_recipe("sft", first_out, whole, out, whole_s, config, peak_lr=peak_lr, warmup=warmup)
    phases = [first, second]
    return {"steps": sum(p["steps"] for p in phases), "cpu_s": round(sum(p["cpu_s"] for p in phases), 1),
            "rows_seen": sum(p["rows_seen"] for p in phases), "first_loss": first["first_loss"],
            "last_loss": second["last_loss"], "phases": phases}  # fmt: skip


def _own(seed_dir: Path) -> list[dict[str, Any]]:
    path = seed_dir / "own.jsonl"
    if not path.is_file():
        raise SystemExit(
            f"{path}: missing; run --stage own for this seed first (the SFT model's own answers)"
        )
    return _read_jsonl(path)


def stage_seed(stage: str, run: Path, seed: int, args: argparse.Namespace) -> None:
    seed_dir = run / f"seed-{seed}"
    results_path = seed_dir / "results.json"
    results = _load(results_path)
    loaded = copy.deepcopy(results)
    runs = seed_dir / "bench"
    rng = random.Random(seed)
    sft_dir = seed_dir / "sft"
    base_config = {"seed": seed, "data_seed": seed}
    eval_options = {"per_template": args.eval_per_template, "max_new_tokens": args.max_new_tokens,
                    "temperature": args.eval_temperature}  # fmt: skip
    eval_seeds = _ints(args.eval_seeds)

    def measure(name: str) -> dict[str, Any]:
        """The evaluation of checkpoint ``name`` (sft, kto, grpo, refine): its first replies, and
        for sft and refine also the replies after one self-refine re-ask."""
        model = sft_dir if name == "sft" else seed_dir / name
        plain = evaluate(model, eval_seeds, runs, threads=args.threads, **eval_options)
        if name == "sft":
            results["sft_per_sample"] = plain["per_sample"]
        entry: dict[str, Any] = {"eval": _strip(plain)}
        if name in ("sft", "refine") and not args.no_self_refine:
            options = (
                *(["ground=true"] if args.ground else []),
                *([f"accept={args.accept}"] if args.accept != "any" else []),
            )
            refined = evaluate(model, eval_seeds, runs, "self-refine", threads=args.threads,
                               strategy_options=options, **eval_options)  # fmt: skip
            entry |= {
                "self_refine": _strip(refined),
                **recovery(refined["first_per_sample"], refined["per_sample"]),
            }
            # The re-ask only where the checker faults the first reply: clean replies are kept as they are.
            gated = evaluate(model, eval_seeds, runs, "self-refine", threads=args.threads,
                             strategy_options=("when=findings", *options), **eval_options)  # fmt: skip
            entry["self_refine_findings"] = _strip(gated)
        return entry

    if stage in ("sft", "sft-more"):
        rows = _read_jsonl(run / "data" / "sft.jsonl")
        rng.shuffle(rows)
        more = stage == "sft-more"  # continue the SFT model for --cpu-minutes more, on fresh row order
        if more:
            random.Random(f"more:{seed}:{results['sft']['train']['cpu_s']}").shuffle(rows)
        config = {**base_config, "per_device_train_batch_size": 8, "max_length": 1024}
        init = sft_dir if more else new_model(run, seed, seed_dir / "init", SIZE)
        short_s = 0.0 if more else min(args.short_minutes, args.cpu_minutes) * 60
        full_s = args.cpu_minutes * 60 - short_s
        # Every row in its short form first: at about a quarter of the cost per step, the model
        # gets the thousands of steps it needs before it copies values from the request.
        train = two_phase(init, rows, rows[: int(full_s * ROWS_PER_CPU_S)], sft_dir, short_s, full_s, config,
                          peak_lr=args.sft_lr, warmup=30)  # fmt: skip
        if more:
            before = results["sft"]
            results.setdefault("sft_history", []).append(_strip_train(before))
            train = {**train, "steps": train["steps"] + before["train"]["steps"],
                     "cpu_s": round(train["cpu_s"] + before["train"]["cpu_s"], 1)}  # fmt: skip
        results["sft"] = {"train": train}
    if stage in ("sft", "sft-more", "sft-eval"):
        # sft-eval evaluates the SFT checkpoint again (after a change of --eval-per-template).
        stage = "sft"
        results["sft"] = {"train": results["sft"]["train"], **measure("sft")}
    elif stage == "reeval":
        # Every checkpoint of the seed evaluated again with the current evaluation options.
        for name in args.reeval.split(","):
            if name in results:
                results[name] = {**results[name], **measure(name)}
    elif stage == "own":
        own_seeds = _ints(args.own_seeds)
        rows = [r for r in _read_jsonl(run / "data" / "sft.jsonl") if r["seed"] in own_seeds]
        # World seeds the SFT data lacks: tasks the model never trained on, built the same way.
        unseen = sorted(set(own_seeds) - {r["seed"] for r in rows})
        with first_turn_traces(_tasks(unseen)):
            rows += [row for s in unseen for row in _world_rows("sft", s)[0]]
        t0 = time.time()
        # Another checkpoint's answers (--own-model kto) are kept apart: they show what a second
        # stage changed on the prompts it trained on, and the SFT model's feed the second stages.
        key = "own" if args.own_model == "sft" else f"own_{args.own_model}"
        model = sft_dir if args.own_model == "sft" else seed_dir / args.own_model
        own = own_answers(model, rows, args.own_samples, args.max_new_tokens, seed)
        _write_jsonl(seed_dir / f"{key}.jsonl", own)
        answers = [a for item in own for a in [item["greedy"], *item["samples"]]]
        results[key] = {
            "rows": len(own), "wall_s": round(time.time() - t0, 1), "own_seeds": own_seeds,
            "faulted": sum(bool(a["codes"]) for a in answers), "answers": len(answers),
            "greedy_exact": sum(i["greedy"]["exact"] for i in own) / len(own),
            "greedy_valid": sum(not i["greedy"]["codes"] for i in own) / len(own),
            "sample_exact": sum(a["exact"] for a in answers) / len(answers),
            "in_band": sum(in_band(i) for i in own),
            "codes": dict(Counter(c for a in answers for c in a["codes"][:1]).most_common()),
        }  # fmt: skip
    elif stage == "kto":
        # Model-aware HiTEC-KTO: the model's own rejected answers plus --kto-hitec times as many injected rows.
        own = own_kto_rows(_own(seed_dir), splice=args.kto_splice, desirable=args.kto_desirable)
        hitec = _read_jsonl(run / "data" / "kto.jsonl")
        rng.shuffle(hitec)
        hitec = hitec[: int(args.kto_hitec * len(own))]
        rows = [{k: r[k] for k in ("prompt", "completion", "tools", "label")} for r in own + hitec]
        # An empty negative (HiTEC's "no call" form of a wrong tool count) supervises one token, the
        # end of the turn, which every right answer ends with too: KTO then lowers it everywhere, and
        # the model runs on past a right call into a broken second one (docs/benchmarks.md).
        kept = [r for r in rows if r["label"] or r["completion"][0]["content"].strip()]
        empty = len(rows) - len(kept)
        if not args.kto_keep_empty:
            rows = kept
        rng.shuffle(rows)
        rows = rows[: int(args.kto_minutes * 60 * ROWS_PER_CPU_S)]
        train = run_recipe("kto", sft_dir, rows, seed_dir / "kto", args.kto_minutes * 60,
                           {**base_config, "per_device_train_batch_size": 8, "max_length": 1024, "beta": args.kto_beta,
                            "desirable_weight": args.kto_desirable_weight, "cut_negatives": not args.kto_whole},
                           peak_lr=args.kto_lr, warmup=5)  # fmt: skip
        # The weight the trainer used: 'balanced' resolved from the rows' labels.
        results["kto"] = {"train": train, "empty_negatives": empty, "kept_empty": args.kto_keep_empty,
                          "desirable_weight": train.pop("desirable_weight"),
                          "desirable": args.kto_desirable, "own_desirable": sum(r["label"] for r in own),
                          "own_undesirable": sum(not r["label"] for r in own),
                          "cut_negatives": train.pop("cut_count"), **measure("kto")}  # fmt: skip
    elif stage == "grpo":
        # The tasks in the model's band (sometimes exact, sometimes not): no group is all-equal.
        rows = [
            {k: i["row"][k] for k in ("prompt", "tools", "gold_calls")} for i in _own(seed_dir) if in_band(i)
        ]
        rng.shuffle(rows)
        rows = rows[: int(args.grpo_minutes * 60 * ROWS_PER_CPU_S)]
        train = run_recipe("grpo", sft_dir, rows, seed_dir / "grpo", args.grpo_minutes * 60,
                           {**base_config, "per_device_train_batch_size": 8, "num_generations": 4,
                            "max_completion_length": 96, "temperature": 1.0, "beta": 0.0},
                           peak_lr=args.grpo_lr, warmup=5, rewards=["schema", "call_match"])  # fmt: skip
        results["grpo"] = {"train": train, **measure("grpo")}
    elif stage == "refine":
        # Model-aware refine rows (the model's own attempts and the real re-ask) before the builder's.
        own = own_refine_rows(_own(seed_dir), wrong_clean=args.refine_wrong_clean, ground=args.ground)
        rng.shuffle(own)
        builder = _read_jsonl(run / "data" / "refine.jsonl")
        rng.shuffle(builder)
        rows = (own + builder)[: int(args.refine_minutes * 60 * ROWS_PER_CPU_S) // 2]
        sft_rows = _read_jsonl(run / "data" / "sft.jsonl")
        rng.shuffle(sft_rows)
        # Half first-step rows, so the model keeps answering the first turn while it learns to refine.
        rows += sft_rows[: len(rows)]
        rows = [{k: r[k] for k in ("prompt", "completion", "tools")} for r in rows]
        rng.shuffle(rows)
        # Short rows first, as in SFT: fixing an attempt means copying values from the request,
        # which the model learns in far more steps than whole rows allow.
        short_s = min(args.refine_short_minutes, args.refine_minutes) * 60
        train = two_phase(sft_dir, rows, rows, seed_dir / "refine", short_s, args.refine_minutes * 60 - short_s,
                          {**base_config, "per_device_train_batch_size": 8, "max_length": 1024},
                          peak_lr=args.refine_lr, warmup=10)  # fmt: skip
        results["refine"] = {"train": train, **measure("refine")}
    # Stages of one seed may run side by side: write back only what this one changed.
    changed = {k: v for k, v in results.items() if loaded.get(k) != v}
    _save(results_path, {**_load(results_path), **changed})
    shown = args.reeval.split(",") if stage == "reeval" else list(changed) if stage == "own" else [stage]
    print(
        json.dumps({name: _strip(results[name]) for name in shown if name in results}, indent=1), flush=True
    )


def _mean_spread(values: list[float | None]) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "–"
    mean = statistics.mean(vals) * 100
    spread = (max(vals) - min(vals)) * 100 / 2
    return f"{mean:.1f} ± {spread:.1f}"


def _beyond_noise(before: list[float | None], deltas: list[float | None]) -> str:
    """ "yes" when every seed moved the metric up and the mean change exceeds the seeds' spread of
    the metric before the stage (half its range): the change is larger than what the seed alone
    moves. Otherwise it says which of the two failed."""
    got = [d for d in deltas if d is not None]
    if len(got) < len(deltas) or not got:
        return "–"
    base = [x for x in before if x is not None]
    spread = (max(base) - min(base)) / 2 if base else 0.0
    if min(got) <= 0:
        return "no (not every seed improves)"
    mean = statistics.mean(got)
    return "yes" if mean > spread else f"no (mean change {mean * 100:.1f} ≤ seed spread {spread * 100:.1f})"


def render(run: Path, seeds: list[int]) -> str:
    per = {s: _load(run / f"seed-{s}" / "results.json") for s in seeds}

    def get(s: int, stage: str, *path: str) -> Any:
        value: Any = per[s].get(stage)
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def col(stage: str, *path: str) -> list[float | None]:
        # Self-refine's first reply comes from its own run; runs recorded before that was kept
        # fall back to the plain run's (the same greedy reply).
        fallback = ("eval", path[-1].removeprefix("first_")) if path[-1].startswith("first_") else None
        return [get(s, stage, *path) if get(s, stage, *path) is not None or not fallback
                else get(s, stage, *fallback) for s in seeds]  # fmt: skip

    cut = any((per[s].get("kto") or {}).get("cut_negatives") for s in seeds)
    kto_name = "KTO (HiTEC + own negatives" + (", cut at the mistake)" if cut else ")")
    sft_eval: dict[str, Any] = next(
        (per[s]["sft"]["eval"] for s in seeds if "eval" in per[s].get("sft", {})), {}
    )
    decoding = (
        f"sampled at temperature {sft_eval['temperature']}" if sft_eval.get("temperature") else "greedy"
    )
    worlds = ", ".join(str(w) for w in sft_eval.get("eval_seeds", [1000]))
    lines = [
        f"Evaluation: {sft_eval.get('n', '?')} held-out tasks (world seeds {worlds}), replies {decoding}.",
        "",
        "| model | metric | before | after | change | beyond seed noise | per seed (before → after) |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = [
        ("SFT from scratch", "exact-call", ("sft", "eval", "exact"), None),
        ("SFT from scratch", "schema-valid", ("sft", "eval", "schema_valid"), None),
        (kto_name, "schema-valid", ("sft", "eval", "schema_valid"), ("kto", "eval", "schema_valid")),
        ("GRPO (schema + call-match, band tasks)", "exact-call", ("sft", "eval", "exact"), ("grpo", "eval", "exact")),
        ("refine-SFT (ToolACE-R)", "recovery after one re-ask", ("sft", "recovery"), ("refine", "recovery")),
        ("refine-SFT", "broken by the re-ask", ("sft", "broken"), ("refine", "broken")),
        # The same model before and after the feedback: does self-refine improve its calls?
        ("SFT, self-refine", "exact-call: first reply → after one re-ask", ("sft", "self_refine", "first_exact"),
         ("sft", "self_refine", "exact")),
        ("refine-SFT, self-refine", "exact-call: first reply → after one re-ask",
         ("refine", "self_refine", "first_exact"), ("refine", "self_refine", "exact")),
        ("refine-SFT, self-refine", "schema-valid: first reply → after one re-ask",
         ("refine", "self_refine", "first_schema_valid"), ("refine", "self_refine", "schema_valid")),
        ("SFT, self-refine when=findings", "exact-call: first reply → after one re-ask",
         ("sft", "self_refine_findings", "first_exact"), ("sft", "self_refine_findings", "exact")),
        ("refine-SFT, self-refine when=findings", "exact-call: first reply → after one re-ask",
         ("refine", "self_refine_findings", "first_exact"), ("refine", "self_refine_findings", "exact")),
        ("refine-SFT, self-refine when=findings", "schema-valid: first reply → after one re-ask",
         ("refine", "self_refine_findings", "first_schema_valid"), ("refine", "self_refine_findings", "schema_valid")),
    ]  # fmt: skip
    for name, metric, before, after in rows:
        b = col(*before)
        a: list[float | None] = col(*after) if after else [None] * len(seeds)
        pairs = ", ".join(
            (f"{x * 100:.1f}" if x is not None else "–")
            + (f" → {y * 100:.1f}" if after and y is not None else "")
            for x, y in zip(b, a, strict=True)
        )
        deltas = [
            y - x if after and x is not None and y is not None else None for x, y in zip(b, a, strict=True)
        ]
        # "broken" is watched, not targeted: it has no noise verdict.
        noise = "" if metric.startswith("broken") else _beyond_noise(b, deltas)
        lines.append(f"| {name} | {metric} | {_mean_spread(b)} | {_mean_spread(a) if after else ''} | "
                     f"{_mean_spread(deltas) if after else ''} | {noise if after else ''} | {pairs} |")  # fmt: skip
    lines += ["", "| model seed | SFT CPU-s | steps | exact-call | schema-valid |", "|---|---|---|---|---|"]
    for s in seeds:
        sft = per[s].get("sft")
        if not sft or "eval" not in sft:
            continue
        points = [*per[s].get("sft_history", []), _strip_train(sft)]
        for p in points:
            lines.append(
                f"| {s} | {p['cpu_s']:.0f} | {p['steps']} | {p['exact'] * 100:.1f} | {p['schema_valid'] * 100:.1f} |"
            )
    return "\n".join(lines) + "\n"


def _weight(text: str) -> float | str:
    return text if text == "balanced" else float(text)


def _ints(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out += list(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run-dir", type=Path, default=Path("runs/learning-check"))
    parser.add_argument(
        "--stage", default="all", help="data, sft, own, kto, grpo, refine, docs, all (comma-separated)"
    )
    parser.add_argument("--seeds", default="0,1,2", help="model seeds (initialisation and data order)")
    parser.add_argument(
        "--train-seeds",
        default="1-48",
        help="world seeds of the SFT data (see docs/benchmarks.md: 1-48 reached 61.2 %% exact-call)",
    )
    parser.add_argument("--kto-seeds", default="1")
    parser.add_argument("--refine-seeds", default="1-4")
    parser.add_argument(
        "--own-seeds",
        default="1-4",
        help="world seeds whose SFT rows the SFT model answers (stage own) for the second stages",
    )
    parser.add_argument(
        "--own-model",
        default="sft",
        help="the checkpoint that answers in stage own (another than sft writes own-NAME.jsonl)",
    )
    parser.add_argument(
        "--own-samples",
        type=int,
        default=OWN_SAMPLES,
        help="answers sampled at temperature 1.0 per task in stage own, besides the greedy one",
    )
    parser.add_argument(
        "--no-self-refine",
        action="store_true",
        help="evaluate the sft and refine checkpoints on first replies only (no self-refine re-ask)",
    )
    parser.add_argument("--eval-seeds", default="1000", help="held-out world seeds (their tasks are pooled)")
    parser.add_argument(
        "--reeval", default="sft,kto,grpo,refine", help="the checkpoints --stage reeval evaluates"
    )
    parser.add_argument(
        "--eval-temperature",
        type=float,
        default=0.0,
        help="sampling temperature of every reply in the evaluation (0: greedy)",
    )
    parser.add_argument(
        "--eval-per-template",
        type=int,
        default=EVAL_PER_TEMPLATE,
        help="held-out tasks per world template (43 templates)",
    )
    parser.add_argument(
        "--max-new-tokens", type=int, default=MAX_NEW_TOKENS, help="longest reply in the evaluation"
    )
    parser.add_argument("--cpu-minutes", type=float, default=15.0, help="SFT budget, process CPU minutes")
    parser.add_argument(
        "--short-minutes",
        type=float,
        default=12.0,
        help="CPU minutes of the SFT budget spent first on short rows (no system prompt, no tool list)",
    )
    parser.add_argument("--kto-minutes", type=float, default=4.0, help="KTO budget, process CPU minutes")
    parser.add_argument("--grpo-minutes", type=float, default=15.0, help="GRPO budget, process CPU minutes")
    parser.add_argument(
        "--refine-minutes", type=float, default=12.0, help="refine-SFT budget, process CPU minutes"
    )
    parser.add_argument(
        "--refine-short-minutes",
        type=float,
        default=4.0,
        help="CPU minutes of the refine budget spent first on short rows",
    )
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sft-lr", type=float, default=1.5e-3)
    parser.add_argument("--kto-lr", type=float, default=1e-4)
    parser.add_argument("--kto-beta", type=float, default=0.1)
    parser.add_argument(
        "--kto-desirable-weight",
        type=_weight,
        default=1.0,
        help="KTO's desirable_weight (TRL), or 'balanced' to set it from the rows' labels "
        "(the KTO paper's Eq. 8); above 1 holds the gold's likelihood up harder",
    )
    parser.add_argument(
        "--kto-hitec",
        type=float,
        default=1.0,
        help="HiTEC-injected KTO rows per row of the model's own (0: only its own answers)",
    )
    parser.add_argument(
        "--kto-desirable",
        choices=("gold", "own"),
        default="gold",
        help="KTO's desirable rows: the gold, or the model's own answers the checklist passes",
    )
    parser.add_argument(
        "--kto-splice",
        action="store_true",
        help="own negatives: the gold's calls before the first faulted call, then the model's own",
    )
    parser.add_argument(
        "--kto-keep-empty",
        action="store_true",
        help="keep the empty undesirable answers in KTO (dropped by default)",
    )
    parser.add_argument(
        "--refine-wrong-clean",
        type=float,
        default=0.0,
        help="refine rows also from the model's wrong answers that the checker passes, "
        "up to this many per exact answer (0: none)",
    )
    parser.add_argument(
        "--ground",
        action="store_true",
        help="refine rows and self-refine with the grounding check (-S ground=true): the re-ask "
        "also names values the request never mentions",
    )
    parser.add_argument(
        "--accept",
        choices=("any", "no_worse"),
        default="any",
        help="self-refine's -S accept: no_worse keeps the reply before a re-ask that the checker finds worse",
    )
    parser.add_argument(
        "--kto-whole",
        action="store_true",
        help="train KTO on whole negatives (default: each cut after its first token that differs "
        "from its gold, the KTO recipe's cut_negatives)",
    )
    parser.add_argument("--grpo-lr", type=float, default=1e-4)
    parser.add_argument("--refine-lr", type=float, default=1e-3)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    run: Path = args.run_dir
    run.mkdir(parents=True, exist_ok=True)
    stages = (
        ["data", "sft", "own", "kto", "grpo", "refine", "docs"]
        if args.stage == "all"
        else args.stage.split(",")
    )
    seeds = _ints(args.seeds)
    for stage in stages:
        t0 = time.process_time()
        if stage == "data":
            info = build_data(run, _ints(args.train_seeds), _ints(args.kto_seeds), _ints(args.refine_seeds))
            build_tokenizer(run, args.vocab)
            _save(run / "data" / "info.json", info)
            print({k: v for k, v in info.items() if k != "reports"}, flush=True)
        elif stage == "docs":
            combined = {f"seed-{s}": {k: v for k, v in _load(run / f"seed-{s}" / "results.json").items()
                                      if not k.endswith("per_sample")} for s in seeds}  # fmt: skip
            combined["data"] = {k: v for k, v in _load(run / "data" / "info.json").items() if k != "reports"}
            _save(run / "results.json", combined)
            table = render(run, seeds)
            (run / "table.md").write_text(table, encoding="utf-8")
            print(table)
        else:
            for seed in seeds:
                stage_seed(stage, run, seed, args)
        print(f"[learning_check] stage {stage}: {time.process_time() - t0:.1f} CPU-s", flush=True)


if __name__ == "__main__":
    main()
