"""`srifty plan`'s promise table: the chosen configuration's job time and cost as distributions, its spot
losses, the fallback and where the spot figures come from (:mod:`srifty.plan.risk`)."""

from __future__ import annotations

from rich.table import Table

from srifty.plan import Plan, Scored


def _p(value: float | None, confidence: float) -> str:
    if value is None:
        return "— (no constraint)"
    return f"{value:.3f}" + (" ✓" if value >= confidence else f" < {confidence:g} ✗")


def promise_table(plan: Plan, s: Scored) -> Table:
    """What the plan promises for ``s`` and how sure it is (see :mod:`srifty.plan.risk`)."""
    table = Table(show_header=False, title=f"promise at confidence {plan.problem.confidence:g}")
    table.add_column("quantity")
    table.add_column("value")
    risk = s.risk
    if risk is None:
        table.add_row("job time / cost", f"{s.time_s:,.0f} s / ${s.cost_usd:,.2f} (no distribution)")
        return table
    p = plan.problem
    rows = [
        ("P(finish by the deadline)", _p(risk.p_meet_deadline, risk.confidence)),
        ("P(cost within the budget)", _p(risk.p_meet_budget, risk.confidence)),
        ("job time: expected / p95", f"{risk.time_mean_s:,.0f} s / {risk.time_p95_s:,.0f} s"),
        ("cost: expected / p95", f"${risk.cost_mean_usd:,.2f} / ${risk.cost_p95_usd:,.2f}"),
        ("spread from model error, iterations, launch", f"±{risk.spread_s:,.0f} s (1σ)"),
    ]
    spot = any(g.market == "spot" for g in s.config.groups)
    if spot:
        rows += [
            (
                "expected spot losses",
                f"{risk.expected_losses:.2f} events ({risk.expected_vms_lost:.2f} VMs), each a relaunch, a restore "
                "and the work since the last checkpoint",
            ),
            ("all spot VMs at the start", "—" if risk.p_obtain_start is None else f"P = {risk.p_obtain_start:.2f}"),
            (
                "checkpoint every",
                "—"
                if risk.checkpoint_interval_s is None
                else f"{risk.checkpoint_interval_s:,.0f} s (Daly, from the loss rate)",
            ),
        ]
        if risk.core_share > 0:
            rows.append(("on-demand core", f"keeps {risk.core_share:.0%} of the throughput while spot VMs are away"))
        if risk.fallback is not None:
            twin = risk.fallback
            when = f"; P(used) = {risk.p_fallback:.2f}" if p.deadline_s is not None else " (no deadline: waits instead)"
            rows.append(
                (
                    "fallback if spot capacity is missing",
                    f"{twin.tagged()} at ${twin.price_usd_per_hour():,.2f}/h{when}",
                )
            )
        else:
            rows.append(
                ("fallback if spot capacity is missing", "none offered (no on-demand twin): waits for capacity")
            )
        for name, source in risk.spot_sources:
            rows.append((f"spot figures of {name}", source))
    elif s.config.groups:
        rows.append(("spot", "none: on-demand VMs are not taken back"))
    for row in rows:
        table.add_row(*row)
    if plan.spot_source:
        table.caption = f"spot model: {plan.spot_source}"
    return table
