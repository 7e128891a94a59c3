"""The report's charts, as plotly figures (plotly is imported only here, when a report is built).

* throughput against GPUs, one line per instance type (mixed configurations as loose markers);
* time against cost, every configuration, the Pareto front, the chosen plans marked;
* predicted against measured (true) iteration time, with the line of perfect prediction;
* MAPE by model, world size and instance type (accuracy runs);
* the runtime timeline: iterations done against time, with its events; the loss each iteration reported,
  and iterations per second over time;
* over seeds: each method's ratios to the reference as a box with every seed's point (broken constraints and
  missing plans drawn above the top, at "∞").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

HEIGHT_PX = 430
SYMBOLS = ("diamond", "square", "triangle-up", "cross", "x", "triangle-down", "pentagon", "hexagon")


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _layout(fig: Any, title: str, x: str, y: str, log_x: bool = False, log_y: bool = False) -> Any:
    fig.update_layout(
        title=title,
        template="plotly_white",
        height=HEIGHT_PX,
        margin={"l": 70, "r": 20, "t": 60, "b": 55},
        legend={"orientation": "v"},
    )
    fig.update_xaxes(title=x, type="log" if log_x else "linear")
    fig.update_yaxes(title=y, type="log" if log_y else "linear")
    return fig


def _type_label(point: Mapping[str, Any]) -> str:
    types = point.get("instance_types") or []
    return types[0] if len(types) == 1 else "mixed"


def throughput_vs_gpus(title: str, series: Mapping[str, Sequence[Mapping[str, Any]]], key: str) -> Any:
    """Throughput (``key``) against GPUs; ``series`` maps a label (``"true"``, ``"srifty"``) to points."""
    go = _go()
    fig = go.Figure()
    for s_index, (label, points) in enumerate(series.items()):
        by_type: dict[str, list[Mapping[str, Any]]] = {}
        for p in points:
            if p.get(key) is not None:
                by_type.setdefault(_type_label(p), []).append(p)
        for name, rows in sorted(by_type.items()):
            rows = sorted(rows, key=lambda r: r["world_size"])
            fig.add_trace(
                go.Scatter(
                    x=[r["world_size"] for r in rows],
                    y=[r[key] if label == "true" else r.get(f"{label}_{key}", r[key]) for r in rows],
                    mode="markers" if name == "mixed" else "lines+markers",
                    name=f"{name} ({label})",
                    text=[r["config"] for r in rows],
                    hovertemplate="%{text}<br>%{x} GPUs<br>%{y:,.1f} samples/s<extra></extra>",
                    marker={"symbol": "circle" if s_index == 0 else "circle-open", "size": 8},
                    line={"dash": "solid" if s_index == 0 else "dot"},
                )
            )
    return _layout(fig, title, "GPUs (world size)", "throughput (samples/s)", log_x=True)


def pareto_front(points: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Points no other beats on both time and cost, fastest first."""
    front: list[Mapping[str, Any]] = []
    best = float("inf")
    usable = [p for p in points if p.get("time_s") is not None and p.get("cost_usd") is not None]
    for p in sorted(usable, key=lambda q: (q["time_s"], q["cost_usd"])):
        if p["cost_usd"] < best - 1e-12:
            front.append(p)
            best = p["cost_usd"]
    return front


def time_vs_cost(
    title: str,
    points: Sequence[Mapping[str, Any]],
    chosen: Mapping[str, Mapping[str, Any]],
    feasible: Any = None,
) -> Any:
    """Every configuration's job time against cost, the Pareto front, and the chosen ones marked.

    Args:
        points: records with ``config``, ``time_s``, ``cost_usd``.
        chosen: label → record of a chosen configuration (the plan's, each method's, the optimum).
        feasible: ``feasible(point) -> bool`` to tell points apart, or ``None``.
    """
    go = _go()
    fig = go.Figure()
    usable = [p for p in points if p.get("time_s") is not None and p.get("cost_usd") is not None]
    groups = [("configurations", usable)]
    if feasible is not None:
        groups = [
            ("meets constraints", [p for p in usable if feasible(p)]),
            ("violates constraints", [p for p in usable if not feasible(p)]),
        ]
    for label, rows in groups:
        if rows:
            fig.add_trace(
                go.Scatter(
                    x=[r["time_s"] for r in rows],
                    y=[r["cost_usd"] for r in rows],
                    mode="markers",
                    name=label,
                    text=[r["config"] for r in rows],
                    hovertemplate="%{text}<br>%{x:,.0f} s<br>$%{y:,.3f}<extra></extra>",
                    marker={"size": 6, "opacity": 0.55, "color": "#9aa5b1" if "violates" in label else "#4c78a8"},
                )
            )
    front = pareto_front(usable)
    if front:
        fig.add_trace(
            go.Scatter(
                x=[r["time_s"] for r in front],
                y=[r["cost_usd"] for r in front],
                mode="lines",
                name="Pareto front",
                line={"color": "#e45756", "width": 2},
                hoverinfo="skip",
            )
        )
    for i, (label, rec) in enumerate(chosen.items()):
        if rec.get("time_s") is None or rec.get("cost_usd") is None:
            continue
        fig.add_trace(
            go.Scatter(
                x=[rec["time_s"]],
                y=[rec["cost_usd"]],
                mode="markers",
                name=f"{label}: {rec['config']}",
                marker={"symbol": "star" if "optimum" in label else SYMBOLS[i % len(SYMBOLS)], "size": 15},
                hovertemplate=f"{label}<br>{rec['config']}<br>%{{x:,.0f}} s<br>$%{{y:,.3f}}<extra></extra>",
            )
        )
    return _layout(fig, title, "job time (s)", "cost (USD)", log_x=True, log_y=True)


def predicted_vs_true(title: str, pairs: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[str]]]) -> Any:
    """Predicted against true iteration time; ``pairs`` maps a method to ``(true_s, predicted_s, labels)``."""
    go = _go()
    fig = go.Figure()
    lo, hi = float("inf"), 0.0
    for method, (truth, predicted, labels) in pairs.items():
        if not truth:
            continue
        lo = min(lo, min(truth), min(predicted))
        hi = max(hi, max(truth), max(predicted))
        fig.add_trace(
            go.Scatter(
                x=list(truth),
                y=list(predicted),
                mode="markers",
                name=method,
                text=list(labels),
                hovertemplate="%{text}<br>true %{x:.4f} s<br>predicted %{y:.4f} s<extra></extra>",
                marker={"size": 5, "opacity": 0.6},
            )
        )
    if hi > 0:
        fig.add_trace(
            go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="perfect", line={"color": "black", "dash": "dash"})
        )
    return _layout(fig, title, "true iteration time (s)", "predicted iteration time (s)", log_x=True, log_y=True)


def mape_bars(title: str, by: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> Any:
    """Grouped bars of MAPE per group; ``by`` maps a method to ``{group: {"mape": fraction}}``."""
    go = _go()
    fig = go.Figure()
    for method, groups in by.items():
        names = list(groups)
        fig.add_trace(go.Bar(x=names, y=[100 * (groups[g]["mape"] or 0.0) for g in names], name=method))
    fig.update_layout(barmode="group")
    return _layout(fig, title, "", "MAPE (%)")


def timeline(title: str, records: Sequence[Mapping[str, Any]]) -> Any:
    """Iterations done against time, with every non-iteration event as a labelled marker, and the deadline and
    iteration target where a record carries ``deadline_s`` / ``target_iterations``."""
    go = _go()
    fig = go.Figure()
    progress = [r for r in records if r["event"] == "iteration"]
    events = [r for r in records if r["event"] != "iteration"]
    if progress:
        fig.add_trace(
            go.Scatter(
                x=[r["time_s"] for r in progress],
                y=[r["iteration"] for r in progress],
                mode="lines",
                name="iterations done",
                line={"color": "#4c78a8"},
            )
        )
    kinds = sorted({r["event"] for r in events})
    for i, kind in enumerate(kinds):
        rows = [r for r in events if r["event"] == kind]
        fig.add_trace(
            go.Scatter(
                x=[r["time_s"] for r in rows],
                y=[r["iteration"] for r in rows],
                mode="markers",
                name=kind,
                text=[_event_text(r) for r in rows],
                hovertemplate="%{text}<br>%{x:,.1f} s, iteration %{y}<extra></extra>",
                marker={"symbol": SYMBOLS[i % len(SYMBOLS)], "size": 12},
            )
        )
        for r in rows:
            fig.add_vline(x=r["time_s"], line={"width": 1, "dash": "dot", "color": "#888"})
    deadlines = {float(r["deadline_s"]) for r in records if r.get("deadline_s") is not None}
    for deadline in sorted(deadlines):
        fig.add_vline(
            x=deadline, line={"width": 2, "color": "#d62728"}, annotation_text="deadline", annotation_position="top"
        )
    targets = {int(r["target_iterations"]) for r in records if r.get("target_iterations") is not None}
    for target in sorted(targets):
        fig.add_hline(y=target, line={"width": 1, "dash": "dash", "color": "#2ca02c"}, annotation_text="all iterations")
    return _layout(fig, title, "time (s)", "iterations done")


def launch_segments(records: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The iteration records split where the count goes back (a relaunch from an earlier checkpoint)."""
    segments: list[list[Mapping[str, Any]]] = []
    last = None
    for r in records:
        if r["event"] != "iteration":
            continue
        if last is None or int(r["iteration"]) <= last:
            segments.append([])
        segments[-1].append(r)
        last = int(r["iteration"])
    return segments


def loss_curve(title: str, records: Sequence[Mapping[str, Any]]) -> Any:
    """The training loss each iteration reported, against the iteration; one line per launch, so that the
    iterations run again after a roll-back to a checkpoint show as a second line over the first."""
    go = _go()
    fig = go.Figure()
    for i, segment in enumerate(launch_segments(records)):
        points = [r for r in segment if isinstance(r.get("loss"), int | float)]
        if points:
            fig.add_trace(
                go.Scatter(
                    x=[r["iteration"] for r in points],
                    y=[r["loss"] for r in points],
                    mode="lines",
                    name=f"launch {i + 1}" if i else "loss",
                )
            )
    return _layout(fig, title, "iteration", "loss")


def throughput_over_time(title: str, records: Sequence[Mapping[str, Any]], window: int = 10) -> Any:
    """Iterations per second against time: over each ``window`` consecutive iterations of one launch (a
    launch's start-up and a roll-back are not counted as progress)."""
    go = _go()
    fig = go.Figure()
    for i, segment in enumerate(launch_segments(records)):
        times = [float(r["time_s"]) for r in segment]
        iters = [int(r["iteration"]) for r in segment]
        xs, ys = [], []
        for end in range(1, len(segment)):
            start = max(0, end - window)
            elapsed = times[end] - times[start]
            if elapsed > 0:
                xs.append(times[end])
                ys.append((iters[end] - iters[start]) / elapsed)
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"launch {i + 1}"))
    return _layout(fig, title, "time (s)", "iterations per second")


def _event_text(record: Mapping[str, Any]) -> str:
    extra = ", ".join(f"{k}={v}" for k, v in record.items() if k not in ("time_s", "iteration", "event"))
    return record["event"] + (f" ({extra})" if extra else "")


def ratio_boxes(title: str, ratios: Mapping[str, Sequence[Any]]) -> Any:
    """Box per method of its ratios over seeds; ``inf``/``"inf"`` (a constraint broken, no plan) drawn at the top."""
    go = _go()
    finite = [float(r) for values in ratios.values() for r in values if _finite_ratio(r)]
    top = max([*finite, 1.0]) * 1.15
    fig = go.Figure()
    for method, values in ratios.items():
        shown = [float(r) if _finite_ratio(r) else top for r in values if r is not None]
        labels = [
            f"{float(r):.3f}" if _finite_ratio(r) else "∞ (broke a constraint or no plan)"
            for r in values
            if r is not None
        ]
        fig.add_trace(
            go.Box(
                y=shown,
                name=method,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                text=labels,
                hovertemplate="%{text}<extra>" + method + "</extra>",
                marker={"size": 5},
            )
        )
    fig.add_hline(y=1.05, line={"dash": "dot", "color": "gray"}, annotation_text="5%")
    fig.add_hline(y=top, line={"dash": "dash", "color": "red"}, annotation_text="∞")
    return _layout(fig, title, "method", "ratio to the reference (1 = optimum)", log_y=True)


def _finite_ratio(value: Any) -> bool:
    return value is not None and value != "inf" and float(value) != float("inf")
