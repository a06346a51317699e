"""NesTools scoring speed: toolmend's compat scorer against a plain re-implementation of the
official procedure that calls the ``rouge`` package (as the official evaluator does).

Both score the 1000 gold chains under a fixed set of perturbations, in one run; the script
prints both times, the ratio, and both metric tables, and fails if any number differs.

    .venv/bin/python benchmarks/score_speed.py [--limit N] [--repeat 3]

Both wall time and CPU time (``time.process_time``, less sensitive to other processes) are
reported, as medians over ``--repeat`` rounds; toolmend is timed cold in every round (fresh
benchmark object, empty ROUGE caches), and the reference builds its gold list per sample as
the official evaluator does.

``rouge==1.0.1`` is a test/benchmark-only dependency (the dev group).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import random
import re
import statistics
import sys
import time
import warnings
from collections import Counter
from datetime import datetime
from typing import Any

from rouge import Rouge

from toolmend._schema import Sample
from toolmend.benchmarks.nestools import NesTools
from toolmend.benchmarks.nestools._benchmark import micro_metrics
from toolmend.benchmarks.nestools._data import gold_chain, to_official_output
from toolmend.benchmarks.nestools._values import _text_score
from toolmend.compare._rouge import rouge_l_scores

# --------------------------------------------------------------------------------------------
# Reference: the official procedure as described in shared/notes/benchmarks.md §2.4, written
# plainly (no caching, rouge package for ROUGE-L, Python literal first then JSON).
# --------------------------------------------------------------------------------------------


def ref_parse(text: str) -> Any:
    try:
        chunk = text[text.find("[") : text.rfind("]") + 1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.literal_eval(chunk)
    except Exception:
        pass
    try:
        return json.loads(chunk)
    except Exception:
        return None


def ref_date(s: str) -> str:
    try:
        if re.match(r"\d{4}-\d{2}-\d{2}", s):
            return datetime.strptime(s, "%Y-%m-%d").strftime("%Y-%m-%d")
        if re.search(r"\b[A-Za-z]+ \d+(st|nd|rd|th)?, \d{4}\b", s):
            m = re.search(r"\b(\d+)(st|nd|rd|th)?\b", s)
            if not m:
                return s
            day, suf = int(m.group(1)), m.group(2)
            ok = {"st": (1, 21, 31), "nd": (2, 22), "rd": (3, 23)}
            if suf and not (day in ok.get(suf, ()) or (suf == "th" and (4 <= day <= 20 or 24 <= day <= 30))):
                return s
            return datetime.strptime(re.sub(r"(\d+)(st|nd|rd|th)", r"\1", s), "%B %d, %Y").strftime(
                "%Y-%m-%d"
            )
        return s
    except ValueError:
        return s


def ref_check(g: Any, p: Any) -> float:
    if g == p:
        return 1
    if isinstance(g, str) and isinstance(p, str):
        r = Rouge()
        a = r.get_scores(p.lower(), g.lower())[0]["rouge-l"]["f"]
        b = r.get_scores(ref_date(p).lower(), ref_date(g).lower())[0]["rouge-l"]["f"]
        return b if b > a else a
    if isinstance(g, int | float) and isinstance(p, int | float):
        return g == p
    if isinstance(g, list) and isinstance(p, list):
        if len(g) != len(p):
            return 0
        return sum(ref_check(x, y) for x, y in zip(g, p, strict=True)) / len(g)
    if isinstance(g, dict) and isinstance(p, dict):
        gk, pk = list(g), list(p)
        if len(gk) != len(pk):
            return 0
        s = 0
        for a, b in zip(gk, pk, strict=True):
            if [c for c in a.lower() if c not in "_ "] == [c for c in b.lower() if c not in "_ "]:
                s += ref_check(g[a], p[b])
        return s / len(pk)
    return 0


def ref_safe(g: Any, p: Any) -> float:
    try:
        return ref_check(g, p)
    except Exception:
        return 0


def ref_resps(item: dict[str, Any]) -> list[Any]:
    r = item.get("responses")
    return [v if isinstance(v, str) else -1 for v in r.values()] if isinstance(r, dict) else []


def ref_score(gold: list[dict[str, Any]], task: str, text: str) -> dict[str, float]:
    c: dict[str, float] = Counter()  # type: ignore[assignment]
    c["api_gold"] = len(gold)
    c["order_gold"] = len(gold) - 1
    nest: dict[str, Any] = {}
    resp_gold: list[list[str]] = []
    for call in gold:
        c["param_gold"] += len(call["parameters"])
        resp_gold.append(call["responses"])
        for v in call["parameters"].values():
            if "API_call" in str(v):
                c["nest_gold"] += 1
                hit = None
                for i, rr in enumerate(resp_gold):
                    for j, r in enumerate(rr):
                        if r == str(v):
                            hit = [i, gold[i]["api_id"], j]
                            break
                nest[str(v)] = hit if hit else str(v)
    pred = ref_parse(text)
    try:
        for it in pred:  # type: ignore[union-attr]
            keys = it.keys()  # non-dict items fail here, as officially
            if "api_name" not in keys or "api_id" not in keys or "parameters" not in keys:
                pred = None
                break
            if not isinstance(it["parameters"], dict):
                pred = None
                break
    except Exception:
        pred = None
    if pred is None:
        return c
    c["format"] = 1
    if len(pred) > 1:
        gp = Counter((gold[i]["api_id"], gold[i + 1]["api_id"]) for i in range(len(gold) - 1))
        pp = Counter((pred[i]["api_id"], pred[i + 1]["api_id"]) for i in range(len(pred) - 1))
        c["order_pred"] += len(pred) - 1
        c["order_correct"] += sum((gp & pp).values())
    left: dict[Any, list[int]] = {}
    for i, call in enumerate(gold):
        left.setdefault(call["api_id"], []).append(i)
    presp: list[list[Any]] = []
    matched: list[list[int]] = []
    for pi, it in enumerate(pred):
        c["api_pred"] += 1
        c["param_pred"] += len(it["parameters"])
        presp.append(ref_resps(it))
        c["nest_pred"] += sum(1 for v in it["parameters"].values() if "API_call" in str(v))
        cands = [
            i for i in range(len(gold)) if gold[i]["api_id"] == it["api_id"] and i in left[gold[i]["api_id"]]
        ]
        if not cands:
            continue
        c["api_correct"] += 1
        best, best_n, best_g = 0, 0, -1
        for gi in cands:
            s = n = 0
            for k, pv in it["parameters"].items():
                if k not in gold[gi]["parameters"]:
                    continue
                gv = gold[gi]["parameters"][k]
                sc = 0
                if nest.get(str(gv)):
                    if isinstance(nest[str(gv)], list):
                        if isinstance(pv, str):
                            g_id, _, g_pos = nest[gv]
                            p_id = p_pos = -1
                            for i, rr in enumerate(presp):
                                for j, r in enumerate(rr):
                                    if r == pv:
                                        p_id, p_pos = i, j
                                        break
                            if p_pos == g_pos and [g_id, p_id] in matched and "API_call" in pv:
                                n += 1
                                sc = 1
                    elif gv == pv:
                        n += 1
                        sc = 1
                else:
                    sc = ref_safe(gv, pv)
                s += sc
            if s > best:
                best, best_n, best_g = s, n, gi
        if best == 0:
            best_g = cands[0]
        c["param_correct"] += best
        c["nest_correct"] += best_n
        matched.append([best_g, pi])
        left[it["api_id"]].remove(best_g)
    presp_all = [ref_resps(it) for it in pred]
    done: dict[int, int] = {}
    for gi, pi in sorted(matched, key=lambda x: x[0]):
        done[gi] = pi
        pp_ = pred[pi]["parameters"]
        for k, v in gold[gi]["parameters"].items():
            if "API_call" in str(v):
                loc = None
                for ii, rr in enumerate(resp_gold):
                    for jj, r in enumerate(rr):
                        if r == v and ii in done and done[ii] < pi:
                            loc = [done[ii], jj]
                if loc:
                    if k not in pp_ or pp_[k] == "UNK":
                        c["nest_error_omission"] += 1
                    elif "API_call" not in str(pp_[k]):
                        c["nest_error_unfind"] += 1
                    else:
                        try:
                            if presp_all[loc[0]][loc[1]] != pp_[k]:
                                c["nest_error_wrong_place"] += 1
                        except IndexError:
                            c["nest_error_wrong_place"] += 1
            elif k in pp_ and "API_call" in str(pp_[k]):
                c["nest_error_hallucination"] += 1
    for gi, pi in matched:
        gp_, pp_ = gold[gi]["parameters"], pred[pi]["parameters"]
        c["para_error_redundancy"] += sum(1 for k in pp_ if k not in gp_)
        for k, v in gp_.items():
            if k not in pp_ or pp_[k] == "UNK":
                c["para_error_omission"] += 1
            elif ref_safe(v, pp_[k]) != 1:
                if str(v) == str(pp_[k]):
                    c["para_error_type"] += 1
                elif str(v).lower() in task.lower():
                    c["para_error_extraction"] += 1
                else:
                    c["para_error_transformation"] += 1
    c["tree"] = int(
        c["api_correct"] == c["api_gold"] == c["api_pred"]
        and c["order_correct"] == c["order_pred"] == c["order_gold"]
        and c["param_correct"] == c["param_pred"] == c["param_gold"]
        and c["nest_gold"] == c["nest_pred"] == c["nest_correct"]
    )
    return c


# --------------------------------------------------------------------------------------------
# Perturbations of the gold answer (deterministic per sample)
# --------------------------------------------------------------------------------------------


def perturbations(sample: Sample) -> dict[str, str]:
    rnd = random.Random(sample.id)
    base = json.loads(to_official_output(sample))
    out = {"gold": json.dumps(base)}

    def variant(name: str, edit: Any) -> None:
        calls = copy.deepcopy(base)
        edit(calls)
        out[name] = json.dumps(calls)

    def drop(calls: list[Any]) -> None:
        del calls[rnd.randrange(len(calls))]

    def swap(calls: list[Any]) -> None:
        i = rnd.randrange(len(calls) - 1)
        calls[i], calls[i + 1] = calls[i + 1], calls[i]

    def change_value(calls: list[Any]) -> None:
        for call in calls:
            for k, v in call["parameters"].items():
                if isinstance(v, str) and "API_call" not in v:
                    words = v.split()
                    call["parameters"][k] = " ".join(words[:-1] or ["x"]) + " extra"
                    return
                if isinstance(v, int | float) and not isinstance(v, bool):
                    call["parameters"][k] = v + 1
                    return

    def rename_key(calls: list[Any]) -> None:
        call = calls[rnd.randrange(len(calls))]
        if call["parameters"]:
            k = next(iter(call["parameters"]))
            call["parameters"][k + "_x"] = call["parameters"].pop(k)

    def unk(calls: list[Any]) -> None:
        for call in calls:
            for k in call["parameters"]:
                call["parameters"][k] = "UNK"
                return

    def shift_refs(calls: list[Any]) -> None:
        for call in calls:
            for k, v in call["parameters"].items():
                if isinstance(v, str) and v.startswith("API_call_"):
                    call["parameters"][k] = "API_call_" + str(int(v.rsplit("_", 1)[1]) + 1)

    def list_responses(calls: list[Any]) -> None:
        for call in calls:
            call["responses"] = list(call["responses"].values())

    def string_ids(calls: list[Any]) -> None:
        for call in calls:
            call["api_id"] = str(call["api_id"])

    def uppercase(calls: list[Any]) -> None:
        for call in calls:
            call["parameters"] = {
                k: v.upper() if isinstance(v, str) and "API" not in v else v
                for k, v in call["parameters"].items()
            }

    def reword_all(calls: list[Any]) -> None:
        # what a model that paraphrases looks like to the scorer: every literal string differs
        for call in calls:
            for k, v in call["parameters"].items():
                if isinstance(v, str) and "API_call" not in v:
                    words = v.split()
                    call["parameters"][k] = " ".join(words[1:] + words[:1]) + " please"

    for name, fn in [
        ("reword_all", reword_all),
        ("drop", drop),
        ("swap", swap),
        ("change_value", change_value),
        ("rename_key", rename_key),
        ("unk", unk),
        ("shift_refs", shift_refs),
        ("list_responses", list_responses),
        ("string_ids", string_ids),
        ("uppercase", uppercase),
    ]:
        variant(name, fn)
    out["python_literal"] = repr(base)
    out["broken_format"] = out["gold"][:-1]
    out["prose"] = "I would call the APIs in order: " + ", ".join(c["api_name"] for c in base)
    return out


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds; medians are reported")
    args = parser.parse_args()
    samples = NesTools(distractors=0).load(limit=args.limit)
    cases = [(s, name, text) for s in samples for name, text in perturbations(s).items()]
    print(f"{len(samples)} samples x {len(cases) // len(samples)} perturbations = {len(cases)} scorings")

    def run_ours() -> list[dict[str, float]]:
        # cold: a fresh benchmark object (no per-sample gold work yet) and empty ROUGE caches,
        # i.e. what one `toolmend score` pass pays
        _text_score.cache_clear()
        rouge_l_scores.cache_clear()
        bench = NesTools(distractors=0)
        return [bench.score(s, text).details["counts"] for s, _, text in cases]

    def run_ref() -> list[dict[str, float]]:
        # the official procedure builds its gold list from the record for every sample; here
        # that is gold_chain(), timed with the rest
        return [ref_score(gold_chain(s), s.metadata["task"], text) for s, _, text in cases]

    times: dict[str, list[tuple[float, float]]] = {"ours": [], "ref": []}
    ours: list[dict[str, float]] = []
    ref: list[dict[str, float]] = []
    for _ in range(max(1, args.repeat)):
        w, c = _clock()
        ours = run_ours()
        w2, c2 = _clock()
        times["ours"].append((w2 - w, c2 - c))
        w, c = _clock()
        ref = run_ref()
        w2, c2 = _clock()
        times["ref"].append((w2 - w, c2 - c))

    # the ROUGE-heavy slice alone, cold
    heavy = [c for c in cases if c[1] == "reword_all"]
    _text_score.cache_clear()
    rouge_l_scores.cache_clear()
    bench = NesTools(distractors=0)
    w, c = _clock()
    for s, _, text in heavy:
        bench.score(s, text)
    h_ours = _clock()[1] - c
    w, c = _clock()
    for s, _, text in heavy:
        ref_score(gold_chain(s), s.metadata["task"], text)
    h_ref = _clock()[1] - c

    keys = list(ours[0])
    ref_full = [{k: float(r.get(k, 0)) for k in keys} for r in ref]
    mismatched = [(cases[i][0].id, cases[i][1]) for i in range(len(cases)) if ours[i] != ref_full[i]]
    m_ours = micro_metrics(ours)
    m_ref = micro_metrics(ref_full)
    print(f"{'metric':28} {'toolmend':>12} {'reference':>12}")
    for k in m_ours:
        print(f"{k:28} {m_ours[k]:12.6f} {m_ref[k]:12.6f}")
    med = {
        who: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
        for who, ts in times.items()
    }
    print(f"rounds: {len(times['ours'])} (medians)")
    print(f"toolmend  wall {med['ours'][0]:7.2f} s   cpu {med['ours'][1]:7.2f} s")
    print(f"reference wall {med['ref'][0]:7.2f} s   cpu {med['ref'][1]:7.2f} s")
    print(
        f"ratio     wall {med['ref'][0] / med['ours'][0]:7.1f}x   cpu {med['ref'][1] / med['ours'][1]:7.1f}x"
    )
    print(
        f"reword_all only ({len(heavy)} scorings, cold caches, ROUGE-heavy, cpu): toolmend {h_ours:.2f} s, "
        f"reference {h_ref:.2f} s, ratio {h_ref / h_ours:.1f}x"
    )
    if mismatched or m_ours != m_ref:
        print(f"MISMATCH on {len(mismatched)} scorings, e.g. {mismatched[:5]}", file=sys.stderr)
        return 1
    print("identical: every per-sample count and every aggregate metric")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
