"""Report figures as inline SVG (matplotlib, Agg backend; the ``viz`` extra).

Every function returns an ``<svg>`` element as text, so the HTML report needs no other file and
the figures stay sharp at any zoom.

>>> svg = bar_chart(["accuracy"], {"model-a": [80.0], "model-b": [60.0]}, title="metrics")
>>> svg.startswith("<svg")
True
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from toolmend._errors import MissingExtraError

__all__ = ["available", "bar_chart", "line_chart"]

_COLOURS = ("#3b6ea5", "#e07b39", "#4f9d69", "#b65f9a", "#8c7a3f", "#5b5b5b")


def available() -> bool:
    """Whether matplotlib is installed (the ``viz`` extra); without it a report has no figures."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _figure(width: float, height: float) -> Any:
    """A new figure and its axes, outside pyplot: no GUI backend, no global figure registry to
    close, and none of the second or so that importing pyplot (and its style library) costs."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingExtraError("matplotlib", "viz", "report plots") from exc
    fig = Figure(figsize=(width, height), dpi=100)
    return fig, fig.subplots()


def bar_chart(
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str = "",
    xlabel: str = "",
    xmax: float | None = None,
) -> str:
    """Horizontal grouped bars: one group per label, one bar per series (run); ``None`` bars are
    left out. Values are written at the bar ends."""
    n_series = max(1, len(series))
    height = max(1.6, 0.32 * len(labels) * n_series + 0.9)
    fig, ax = _figure(8.0, min(height, 30.0))
    bar_h = 0.8 / n_series
    for i, (name, values) in enumerate(series.items()):
        # The y axis is inverted below: series 0 on top in each group, as in the legend.
        ys = [j + i * bar_h - 0.4 + bar_h / 2 for j in range(len(labels))]
        vals = [v if v is not None else 0.0 for v in values]
        bars = ax.barh(ys, vals, height=bar_h * 0.92, label=name, color=_COLOURS[i % len(_COLOURS)])
        for bar, v in zip(bars, values, strict=True):
            if v is not None:
                ax.text(
                    bar.get_width(),
                    bar.get_y() + bar.get_height() / 2,
                    f" {v:.1f}",  # one precision, as in the tables
                    va="center",
                    fontsize=8,
                )
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels([_short(label) for label in labels], fontsize=9)
    ax.invert_yaxis()
    top = xmax if xmax is not None else max([v or 0.0 for vs in series.values() for v in vs] + [1e-9])
    ax.set_xlim(0, top * 1.12)
    if title:
        ax.set_title(title, fontsize=11, loc="left")
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    if n_series > 1:
        # Outside the axes, so that it never hides a bar.
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(fig)


def line_chart(
    xs: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str = "",
    xlabel: str = "",
    ymax: float | None = 100.0,
) -> str:
    """One line per series over the points ``xs`` (pass^k over k); ``None`` points are skipped."""
    fig, ax = _figure(6.0, 3.2)
    for i, (name, values) in enumerate(series.items()):
        pts = [(j, v) for j, v in enumerate(values) if v is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name,
                color=_COLOURS[i % len(_COLOURS)])  # fmt: skip
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels(list(xs), fontsize=9)
    if ymax is not None:
        ax.set_ylim(0, ymax * 1.05)
    if title:
        ax.set_title(title, fontsize=11, loc="left")
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=9)
    ax.grid(alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    if len(series) > 1:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(fig)


def _svg(fig: Any) -> str:
    import matplotlib

    buf = io.StringIO()
    # No hashsalt-dependent ids changing between runs, text as paths (no font needed to view).
    with matplotlib.rc_context({"svg.hashsalt": "toolmend", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    # Drop the XML prolog and doctype: the element is inlined into an HTML page.
    return text[text.index("<svg") :] if "<svg" in text else text


def _short(label: str, width: int = 48) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"
