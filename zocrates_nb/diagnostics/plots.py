"""Plots of the diagnostics views (matplotlib; the only module that imports it).

Every function takes the DataFrame of the matching ``Diagnostics`` view and
returns a ``matplotlib.figure.Figure`` built without pyplot: no global figure
state, no GUI backend needed (safe under Agg and in the test suite), and
Jupyter's inline backend still displays a returned Figure.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.figure import Figure

_MUTED = "#6b7280"
_COLOURS = {"lexical": "#2563eb", "dense": "#d97706", "hybrid": "#059669", "all": "#374151"}


def _figure(title: str, width: float = 6.4, height: float = 3.6) -> tuple[Figure, Any]:
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, loc="left", fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _no_data(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} logged yet", ha="center", va="center", color=_MUTED, transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _legend(fig: Figure, ncols: int = 3) -> None:
    """Legend below the axes, where it cannot cover bars."""
    fig.legend(loc="outside lower center", ncols=ncols, fontsize=8, frameon=False)


def plot_hit_rates(df: pd.DataFrame) -> Figure:
    """Hit rate per search mode, and the retrievers' shares of the results (from ``hit_rates()``)."""
    fig, ax = _figure("Searches whose results were read or cited")
    if df.empty:
        _no_data(ax, "searches")
        return fig
    modes = list(df["mode"])
    x = range(len(modes))
    width = 0.2
    for offset, column, label in (
        (-1.5, "hit_rate", "read or cited"),
        (-0.5, "read_rate", "read"),
        (0.5, "lexical_share", "results with lexical rank"),
        (1.5, "dense_share", "results with dense rank"),
    ):
        values = df[column].fillna(0).astype(float)
        ax.bar([i + offset * width for i in x], values, width, label=label)
    ax.set_xticks(list(x), modes)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share")
    _legend(fig, ncols=4)
    return fig


def plot_token_costs(df: pd.DataFrame) -> Figure:
    """Prompt / completion / profile tokens per group (from ``token_costs()``)."""
    fig, ax = _figure("LLM tokens")
    if df.empty:
        _no_data(ax, "LLM calls")
        return fig
    groups = [c for c in ("session", "role", "model") if c in df.columns]
    labels = [" · ".join(str(row[g]) for g in groups) for _, row in df.iterrows()]
    y = range(len(labels))
    prompt_only = (df["prompt_tokens"] - df["profile_tokens"]).clip(lower=0).astype(float)
    ax.barh(list(y), df["profile_tokens"].astype(float), height=0.6, label="profile (in prompt)", color="#7c3aed")
    ax.barh(
        list(y),
        prompt_only,
        height=0.6,
        left=df["profile_tokens"].astype(float),
        label="rest of prompt",
        color="#2563eb",
    )
    ax.barh(
        list(y),
        df["completion_tokens"].astype(float),
        height=0.6,
        left=df["prompt_tokens"].astype(float),
        label="completion",
        color="#d97706",
    )
    ax.set_yticks(list(y), labels, fontsize=8)
    ax.set_xlabel("tokens")
    _legend(fig)
    return fig


def plot_latency(df: pd.DataFrame) -> Figure:
    """p50 / p95 / p99 latency per event kind, log scale (from ``latency()``)."""
    fig, ax = _figure("Latency by event kind")
    if df.empty:
        _no_data(ax, "timed events")
        return fig
    kinds = list(df["kind"])
    x = range(len(kinds))
    for offset, column in ((-0.25, "p50"), (0.0, "p95"), (0.25, "p99")):
        ax.bar([i + offset for i in x], df[column].astype(float), 0.25, label=column)
    ax.set_xticks(list(x), kinds)
    ax.set_yscale("log")
    ax.set_ylabel("ms")
    _legend(fig)
    return fig


def plot_eval(df: pd.DataFrame, metric: str = "ndcg@10") -> Figure:
    """Evaluation runs side by side: ``metric`` per dataset and mode, latest run of each (from ``eval_runs()``)."""
    fig, ax = _figure(f"Evaluation: {metric}")
    if df.empty:
        _no_data(ax, "evaluation runs")
        return fig
    latest = df.sort_values("ts").groupby(["dataset", "mode"], dropna=False).tail(1)
    table = latest.pivot_table(index="dataset", columns="mode", values=metric, aggfunc="last")
    datasets, modes = list(table.index), list(table.columns)
    width = 0.8 / max(len(modes), 1)
    for j, mode in enumerate(modes):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(datasets))]
        values = table[mode].astype(float).fillna(0)
        bars = ax.bar(xs, values, width, label=str(mode), color=_COLOURS.get(str(mode)))
        ax.bar_label(bars, fmt="%.3f", fontsize=7)
    ax.set_xticks(range(len(datasets)), datasets)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(metric)
    _legend(fig)
    return fig


def plot_staleness(df: pd.DataFrame, limit: int = 25) -> Figure:
    """Per document: reads served by the fast path vs reads that re-materialised (from ``staleness()``).

    A fast-path read found the bundle's SHA-256 unchanged and served it from disk; a
    re-materialised read found the source changed and converted it again. Detected source
    changes (sync or read) are written beside each bar. The ``limit`` most-read documents
    are shown, so a big library stays legible.
    """
    rows = (
        df.sort_values(["reads", "hash_changes", "key"], ascending=[False, False, True]).head(limit)
        if not df.empty
        else df
    )
    shown = f" (top {len(rows)} of {len(df)})" if len(df) > len(rows) else ""
    fig, ax = _figure(
        f"Reads per document: fast path vs re-materialised{shown}", height=max(2.4, 0.9 + 0.28 * len(rows))
    )
    if df.empty:
        _no_data(ax, "reads or source changes")
        return fig
    rows = rows.iloc[::-1]  # most-read at the top
    y = list(range(len(rows)))
    fast = rows["fast_path_reads"].fillna(0).astype(float)
    remat = rows["rematerialisations"].fillna(0).astype(float)
    other = (rows["reads"].fillna(0).astype(float) - fast - remat).clip(lower=0)
    ax.barh(y, fast, height=0.6, label="fast path (hash unchanged)", color=_COLOURS["hybrid"])
    ax.barh(y, remat, height=0.6, left=fast, label="re-materialised (source changed)", color=_COLOURS["dense"])
    if other.any():
        ax.barh(y, other, height=0.6, left=fast + remat, label="other reads", color=_MUTED)
    totals = fast + remat + other
    for i, (total, changes) in enumerate(zip(totals, rows["hash_changes"].fillna(0).astype(int), strict=True)):
        if changes:
            ax.text(total, i, f"  {changes} change{'s' if changes != 1 else ''}", va="center", fontsize=7, color=_MUTED)
    ax.set_yticks(y, list(rows["key"]), fontsize=8)
    ax.set_xlabel("reads")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlim(0, max(1.0, float(totals.max())) * 1.25)
    _legend(fig)
    return fig


def plot_citation_checks(df: pd.DataFrame) -> Figure:
    """Verified and failed citations per model, failures split by reason (from ``citation_checks()``)."""
    fig, ax = _figure("Citations checked against the evidence")
    if df.empty:
        _no_data(ax, "answers")
        return fig
    reasons = [c for c in df.columns[list(df.columns).index("failed") + 1 :] if df[c].sum() > 0]
    totals = df.groupby("model")[["verified", *reasons]].sum()
    labels = list(totals.index)
    y = range(len(labels))
    left = pd.Series(0.0, index=totals.index)
    for column in ("verified", *reasons):
        values = totals[column].astype(float)
        colour = "#059669" if column == "verified" else None
        ax.barh(list(y), values, height=0.6, left=left, label=column.replace("_", " "), color=colour)
        left += values
    ax.set_yticks(list(y), labels, fontsize=8)
    ax.set_xlabel("citations")
    _legend(fig)
    return fig
