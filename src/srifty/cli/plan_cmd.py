"""`srifty plan` and `srifty simulate`: the user-facing commands over :mod:`srifty.plan` and :mod:`srifty.sim`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from srifty.cli.console import err, out, styled
from srifty.cli.plan_promise import promise_table
from srifty.errors import InfeasiblePlanError, SpecError, SriftyError
from srifty.plan import Plan, Scored, count_text, get_method, planning_methods
from srifty.units import usd_text


def _config_table(title: str, s: Scored, sources: dict[str, str], errors: dict[str, float]) -> Table:
    table = Table(title=title, caption=f"in {s.config.where()}" + _price_scope(s))
    columns = ("group", "GPU", "GPUs/VM", "market", "local batch", "per hour (group)", "grad weight", "profile")
    for column in (*columns, "source", "expected error"):
        table.add_column(column, justify="left" if column in ("group", "GPU", "profile", "source") else "right")
    for g, price in zip(s.config.groups, s.config.group_prices_usd_per_hour(), strict=True):
        source = sources.get(g.instance.gpu_name, "")
        estimated = source.startswith("estimated")
        kind = styled("yellow", "estimated") if estimated else Text("measured")
        error = errors.get(g.instance.gpu_name, 0.0)
        table.add_row(
            g.notation(),
            g.instance.gpu_name,
            str(g.instance.gpus_per_vm),
            g.market,
            str(g.local_batch),
            usd_text(price),
            f"{g.local_batch / s.config.global_batch:.5f}",
            kind,
            source.removeprefix("estimated from ").removeprefix("measured: "),
            f"±{100 * error:.0f}%" if estimated else "—",
        )
    return table


def _job_time_text(plan: Plan, s: Scored) -> str:
    """``"178.5 s (training 23.5 s + fixed overheads 155.0 s)"``: the overheads are the same for every
    configuration (a VM launch and a checkpoint restore), so only training time tells configurations apart."""
    overhead = plan.problem.overhead_s
    return f"{s.time_s:,.1f} s (training {s.time_s - overhead:,.1f} s + fixed overheads {overhead:,.1f} s)"


def _answer(plan: Plan, s: Scored) -> Text:
    """The answer: what to rent, where, how long it takes and what it costs (and, when a time tolerance chose
    it, what the fastest would take and cost)."""
    label = "Chosen" if s.feasible else "Chosen (violates constraints)"
    text = Text.assemble(
        (f"{label}: {s.config.tagged()}", "bold"),
        f" in {s.config.where()}{_price_scope(s)}: {_job_time_text(plan, s)}, {usd_text(s.cost_usd)}",
    )
    fastest = plan.fastest
    if fastest is not None and plan.time_tolerance is not None:
        text.append(
            f"\n  the cheapest within {100 * plan.time_tolerance:g}% of the fastest found, which takes "
            f"{fastest.time_s:,.1f} s for {usd_text(fastest.cost_usd)} (`time_tolerance: 0` chooses it)"
        )
    return text


def _promise_rows(plan: Plan, s: Scored) -> list[tuple[str, str]]:
    """The chosen configuration's probabilities and how it compares with the fastest (``min_time``).

    This is the slot for every promise the plan makes about the chosen configuration (issue 23 adds the spot
    model's probabilities here).
    """
    p = plan.problem
    rows: list[tuple[str, str]] = []
    if s.p_meet_deadline is not None and p.deadline_s is not None:
        rows.append(("P(meet deadline)", f"{s.p_meet_deadline:.3f} (deadline {p.deadline_s:,.0f} s)"))
    if plan.time_tolerance is not None:
        fastest = plan.fastest or s
        limit = fastest.time_s * (1.0 + plan.time_tolerance)
        rows.append(("time tolerance", f"{100 * plan.time_tolerance:g}% of the fastest: up to {limit:,.1f} s"))
        if plan.fastest is not None:
            f = plan.fastest
            what = f"{f.time_s:,.1f} s, {usd_text(f.cost_usd)}: {f.config} ({f.config.where()})"
            rows.append(("fastest found", what))
    return rows


def _summary_table(plan: Plan, s: Scored) -> Table:
    e = s.estimate
    p = plan.problem
    table = Table(show_header=False, title="prediction")
    table.add_column("quantity")
    table.add_column("value")
    rows: list[tuple[str, str | Text]] = [
        ("job time", _job_time_text(plan, s) + (f" (deadline {p.deadline_s:,.0f} s)" if p.deadline_s else "")),
        ("cost", usd_text(s.cost_usd) + (f" (budget {usd_text(p.budget_usd)})" if p.budget_usd else "")),
        *_promise_rows(plan, s),
        ("world size (GPUs) / VMs", f"{s.config.world_size} / {s.config.n_vms}"),
        (
            "iteration time mean [p5, p95]",
            f"{e.iter_mean_s * 1000:,.1f} ms [{e.iter_p5_s * 1000:,.1f}, {e.iter_p95_s * 1000:,.1f}]",
        ),
        ("compute / exposed communication", f"{e.compute_s * 1000:,.1f} ms / {e.comm_exposed_s * 1000:,.1f} ms"),
        ("throughput", f"{s.throughput_samples_per_s:,.1f} samples/s"),
    ]
    if e.iter_mean_error_s > 0:
        rows.append(
            (
                "estimation error of the mean (1σ)",
                f"±{e.iter_mean_error_s * 1000:,.1f} ms per iteration (estimated profiles, systematic)",
            )
        )
    if e.iteration_model:
        rows.append(("iteration model", e.iteration_model))
    if e.estimated_profiles:
        rows.append(("profiles", styled("yellow", "includes estimated profiles")))
    for row in rows:
        table.add_row(*row)
    return table


def _price_scope(s: Scored) -> str:
    return "" if all(g.instance.price_covers_host_vm for g in s.config.groups) else " (GPU-only price †)"


def _list_table(title: str, items: tuple[Scored, ...] | list[Scored], mark: Scored | None = None) -> Table:
    table = Table(title=title)
    with_deadline = any(s.p_meet_deadline is not None for s in items)
    columns = ("config", "where", "time s", "cost", "samples/s", "meets constraints")
    for column in (*columns, "P(meet deadline)") if with_deadline else columns:
        table.add_column(column, justify="left" if column in ("config", "where") else "right")
    for s in items:
        chosen = mark is not None and s.config.key == mark.config.key
        sharded = "" if s.config.describe() == s.config.notation() else s.config.describe()[len(s.config.notation()) :]
        name = Text(s.config.tagged() + sharded) + (styled("bold", " ◀ chosen") if chosen else Text())
        row: list[str | Text] = [
            name,
            s.config.where() + ("†" if _price_scope(s) else ""),
            f"{s.time_s:,.1f}",
            usd_text(s.cost_usd),
            f"{s.throughput_samples_per_s:,.1f}",
            "yes" if s.feasible else "no: " + ", ".join(s.violations),
        ]
        if with_deadline:
            row.append("—" if s.p_meet_deadline is None else f"{s.p_meet_deadline:.3f}")
        table.add_row(*row)
    return table


def _pruned_table(plan: Plan) -> Table:
    table = Table(title="pruned before search (one reason per offer)")
    for column in ("offer", "rule", "why"):
        table.add_column(column)
    assert plan.pruning is not None
    for t in plan.pruning.types:
        table.add_row(t.key, t.rule, t.reason)
    for d in plan.pruning.placements:
        table.add_row(d.placement.label, "placement", d.reason)
    for o in plan.placements:
        if o.mode == "skipped" and o.placement is not None:
            table.add_row(o.placement.label, "placement", f"skipped: {o.note}")
    return table


def _search_line(plan: Plan) -> Text:
    """How the plan was found: method, mode, goal, how much was searched and how long it took."""
    p = plan.problem
    predicted = plan.n_evaluated if plan.n_predicted is None else plan.n_predicted
    return styled(
        "bold",
        "srifty plan",
        f" ({plan.method}, {plan.mode}): goal {p.goal}, global batch {p.global_batch}, {p.iterations} "
        f"iterations; searched {count_text(plan.search_space_size)} configurations in "
        f"{max(len(plan.placements), 1)} placement(s), scored {plan.n_evaluated:,}, predicted {predicted:,}, "
        f"in {plan.solve_time_s:.2f} s",
    )


def shown_types(plan: Plan) -> tuple[set[str], set[str]]:
    """Instance types and GPUs of the configurations a plan shows (chosen, fastest, alternatives, closest)."""
    shown = [plan.best, plan.fastest, *plan.alternatives]
    if plan.infeasibility is not None:
        shown.append(plan.infeasibility.closest)
    groups = [g for s in shown if s is not None for g in s.config.groups]
    return {g.instance.name for g in groups}, {g.instance.gpu_name for g in groups}


def _profiles_table(plan: Plan, gpus: set[str] | None) -> Table | None:
    """Where each GPU's compute profile came from (``gpus``: only these)."""
    rows = sorted((g, w) for g, w in plan.profile_sources.items() if gpus is None or g in gpus)
    if not rows:
        return None
    table = Table(title="compute profiles")
    table.add_column("GPU")
    table.add_column("source")
    for gpu, where in rows:
        table.add_row(gpu, Text(where) if not where.startswith("estimated") else styled("yellow", where))
    return table


def show_plan(plan: Plan, estimated_hints: dict[str, str] | None = None, show_pruned: bool = False) -> None:
    """Print a plan, the answer first: the chosen configuration, its promises and prediction, then the
    alternatives, the Pareto front and the explanation; profiles and network figures of the types shown
    (``show_pruned``: of every type, and every offer and placement pruned, with its reason)."""
    if plan.best is not None:
        out.print(_answer(plan, plan.best), soft_wrap=True)
        label = "chosen configuration" if plan.best.feasible else "chosen configuration (violates constraints)"
        out.print(
            _config_table(
                f"{label}: {plan.best.config.describe()}", plan.best, plan.profile_sources, plan.profile_errors
            )
        )
        out.print(_summary_table(plan, plan.best))
        out.print(promise_table(plan, plan.best))
    elif plan.infeasibility is not None:
        _print_infeasible(plan)
    if plan.alternatives:
        out.print(_list_table("next best alternatives", plan.alternatives))
    if plan.pareto and get_method(plan.method).honours_constraints:
        out.print(_list_table("Pareto front: time vs cost (all constraints ignored)", plan.pareto, plan.best))
    for note in plan.notes:
        out.print(styled("yellow", "note:", f" {note}"), soft_wrap=True)
    out.print(_search_line(plan), soft_wrap=True)
    if show_pruned and plan.pruning is not None:
        out.print(_pruned_table(plan))
    for line in plan.explanation:
        out.print(Text(line), soft_wrap=True)
    types, gpus = (None, None) if show_pruned else shown_types(plan)
    profiles = _profiles_table(plan, gpus)
    if profiles is not None:
        out.print(profiles)
    for gpu, command in sorted((estimated_hints or {}).items()):
        if gpus is None or gpu in gpus:
            out.print(styled("yellow", f"{gpu} is estimated", f"; to measure it instead: {command}"), soft_wrap=True)
    show_network_sources(
        {t: note for t, note in plan.network_sources.items() if types is None or t in types},
        None if show_pruned else len(plan.network_sources),
    )


def _print_infeasible(plan: Plan) -> None:
    """No configuration meets the constraints: which binds, and the closest configuration (the error that
    follows says how to fix it)."""
    assert plan.infeasibility is not None
    closest = plan.infeasibility.closest
    what = f"No configuration meets the constraints ({plan.infeasibility.binding_constraint} binds)"
    out.print(styled("bold", what, "; the closest configuration:" if closest else "."), soft_wrap=True)
    if closest is not None:
        title = f"closest configuration: {closest.config.describe()}"
        out.print(_config_table(title, closest, plan.profile_sources, plan.profile_errors))
        out.print(_summary_table(plan, closest))
        out.print(promise_table(plan, closest))


def show_network_sources(notes: dict[str, str], of_total: int | None = None) -> None:
    """Per instance type, where the network figures come from (probed or not, and how far off); ``of_total``:
    how many types there are in all when only some are shown."""
    if not notes:
        return
    title = "network figures (64 MiB allreduce)"
    if of_total is not None and of_total > len(notes):
        title += f": the {len(notes)} types shown above (--show-pruned: all {of_total})"
    table = Table(title=title)
    table.add_column("instance type")
    table.add_column("source")
    for name, note in sorted(notes.items()):
        table.add_row(name, Text(note) if "not probed" not in note else styled("yellow", note))
    out.print(table)


def plan_command(
    spec_path: Annotated[Path, typer.Argument(help="Job spec YAML.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the plan as a versioned JSON file.")] = None,
    skypilot: Annotated[
        Path | None, typer.Option("--skypilot", help="Write SkyPilot task YAML per group here.")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            help=f"srifty, or a baseline or ablation: {', '.join(m for m in planning_methods() if m != 'srifty')}."
        ),
    ] = "srifty",
    mode: Annotated[str, typer.Option(help="auto, exhaustive or ilp.")] = "auto",
    top_k: Annotated[int, typer.Option(help="Alternatives to show.")] = 5,
    max_sim_calls: Annotated[int, typer.Option(help="Largest space searched exhaustively.")] = 10_000,
    iters: Annotated[int, typer.Option(help="Iterations sampled per simulation.")] = 100,
    train_command: Annotated[str, typer.Option(help="Training command for the export.")] = "python train.py",
    install: Annotated[
        str | None,
        typer.Option(
            help="With --skypilot: where the VMs install srifty from, a wheel file or a pip requirement such as "
            "git+https://github.com/OWNER/srifty@COMMIT (default: where this srifty came from, if a VM can reach it)."
        ),
    ] = None,
    zone_names: Annotated[
        Path | None,
        typer.Option(
            help="With --skypilot: AWS zone ID to name mapping (SkyPilot's az_mappings CSV; default: SkyPilot's "
            "own cached mapping of your account, if any)."
        ),
    ] = None,
    show_pruned: Annotated[
        bool, typer.Option("--show-pruned", help="List every offer and placement pruned before search, and why.")
    ] = False,
    prune: Annotated[
        bool, typer.Option("--prune/--no-prune", help="Prune types and zones that cannot hold the optimum.")
    ] = True,
) -> None:
    """Plan the fastest or cheapest VM configuration for a job spec."""
    from srifty.plan import plan_spec

    if method not in planning_methods():
        raise SpecError(f"--method must be one of {', '.join(planning_methods())}, got '{method}'")
    ignores_constraints = not get_method(method).honours_constraints
    if mode not in ("auto", "exhaustive", "ilp"):
        raise SpecError(f"--mode must be auto, exhaustive or ilp, got '{mode}'")
    if top_k < 0 or max_sim_calls < 0:
        raise SpecError(f"--top-k and --max-sim-calls must be ≥ 0, got {top_k} and {max_sim_calls}")
    if iters < 1:
        raise SpecError(f"--iters must be at least 1 iteration to sample, got {iters}")
    plan, inputs = plan_spec(
        spec_path, method=method, mode=mode, top_k=top_k, max_sim_calls=max_sim_calls, iters=iters, prune=prune
    )
    show_plan(plan, inputs.measure_hints, show_pruned)
    out.print(f"bandwidth model: {inputs.net_source}", soft_wrap=True)
    if json_out is not None:
        plan.save(json_out)
        out.print(f"wrote {json_out}")
    if plan.best is not None and (plan.best.feasible or ignores_constraints):
        _print_exports(plan, spec_path, skypilot, train_command, install, zone_names)
    if plan.infeasibility is not None and not (plan.best is not None and ignores_constraints):
        raise InfeasiblePlanError(
            f"no configuration meets the constraints ({plan.infeasibility.binding_constraint} binds): "
            f"{plan.infeasibility.message}",
            plan.infeasibility.binding_constraint,
        )


def _print_exports(
    plan: Plan, spec_path: Path, skypilot: Path | None, train_command: str, install: str | None,
    zone_names: Path | None,
) -> None:  # fmt: skip
    """Write the SkyPilot tasks (``--skypilot``) and print the torchrun commands of the chosen configuration."""
    from srifty.plan import torchrun_commands

    assert plan.best is not None
    job = plan.spec_name or spec_path.stem
    if skypilot is not None:
        _export_skypilot(plan, skypilot, job, spec_path, train_command, install, zone_names)
    out.print(styled("bold", "torchrun commands", " (one line per group of VMs):"))
    for line in torchrun_commands(plan.best.config, job, train_command):
        out.print(line, soft_wrap=True, markup=False)


def _export_skypilot(
    plan: Plan, directory: Path, job: str, spec_path: Path, train_command: str, install: str | None,
    zone_names: Path | None,
) -> None:  # fmt: skip
    """``--skypilot DIR``: a task per group, and the srifty-controlled task where there is one (with the plan
    beside it, ``DIR/plan.json``, when ``srifty run --config`` cannot carry the configuration's strategy)."""
    from srifty.catalog import read_zone_names, skypilot_zone_names
    from srifty.plan import INSTALL_HOW, install_source, workdir_path, write_controlled, write_skypilot

    assert plan.best is not None
    config = plan.best.config
    source = install_source(install)
    names = read_zone_names(zone_names) if zone_names is not None else skypilot_zone_names()
    for path in write_skypilot(config, directory, job, train_command, names, source):
        out.print(f"wrote {path}")
    if len(config.groups) > 1:
        out.print("no srifty-controlled task: a SkyPilot cluster holds one instance type, this plan has several "
                  "(srifty launch brings up one cluster per group)")  # fmt: skip
    elif source is None:
        out.print(
            "no srifty-controlled task: the VMs need srifty and this one is installed from a local folder; "
            + INSTALL_HOW
        )
    else:
        spec_file = workdir_path(spec_path)
        plan_file = None
        if config.sharding_env():  # `srifty run --config` would run it as the spec says (DDP for auto)
            try:
                plan_file = workdir_path(directory / "plan.json")
            except SpecError as error:
                out.print(
                    f"no srifty-controlled task: it runs {config.describe()} from the plan file, "
                    f"which the VMs must see: {error}"
                )
                return
            plan.save(directory / "plan.json")
            out.print(f"wrote {directory / 'plan.json'} (the controlled task runs {config.describe()} from it)")
        controlled = write_controlled(config, directory, job, spec_file, train_command, names, source, plan_file)
        out.print(f"wrote {controlled} (srifty run --hosts on the head node; srifty installed from {source.origin})")


def simulate_command(
    spec_path: Annotated[Path, typer.Argument(help="Job spec YAML (model, region, profiles, network model).")],
    config: Annotated[str, typer.Option("--config", help='Configuration, e.g. "4xg4dn.12xlarge@64,2xp3.8xlarge@128".')],
    iters: Annotated[int, typer.Option(help="Iterations to sample.")] = 100,
    seed: Annotated[int | None, typer.Option(help="Seed (default: the spec's).")] = None,
    transfers: Annotated[str, typer.Option(help="bucket (DDP buckets) or layer (per parameter).")] = "bucket",
    overlap: Annotated[str, typer.Option(help="fair_share (the paper's) or sequential.")] = "fair_share",
    allocation_probes: Annotated[
        Path | None,
        typer.Option(
            "--allocation-probes",
            help="A probe set of the VMs the job runs on (srifty probe on them, sizes above the MTU): predict "
            "for this allocation instead of an average one.",
        ),
    ] = None,
) -> None:
    """Predict the iteration time of one configuration."""
    import numpy as np

    from srifty.catalog import load_catalog
    from srifty.plan import require_fits, resolve, spec_config
    from srifty.sim import SimOptions, Simulator
    from srifty.spec import load_spec

    if transfers not in ("bucket", "layer"):
        raise SpecError(f"--transfers must be bucket or layer, got '{transfers}'")
    if overlap not in ("fair_share", "sequential"):
        raise SpecError(f"--overlap must be fair_share or sequential, got '{overlap}'")
    if iters < 1:
        raise SpecError(f"--iters must be at least 1 iteration to sample, got {iters}")
    spec = load_spec(spec_path)
    catalog = load_catalog()
    try:
        parsed = spec_config(config, spec, catalog)
    except SpecError as error:
        raise SpecError(f"--config: {error}") from None
    inputs = resolve(spec, catalog, [g.instance for g in parsed.groups])
    require_fits(parsed, inputs.profiles, "--config")
    net_model = inputs.net_model
    probed = None
    if allocation_probes is not None:
        from srifty.network import read_probes
        from srifty.sim import AllocationModel, probe_allocation

        try:
            probed = probe_allocation(net_model, read_probes(allocation_probes), [g.instance for g in parsed.groups])
        except SriftyError as error:
            raise SpecError(f"--allocation-probes {allocation_probes}: {error}") from None
        net_model = AllocationModel(net_model, probed)
    sim = Simulator(inputs.profiles, net_model, SimOptions(iters=iters, transfers=transfers, overlap=overlap))  # type: ignore[arg-type]
    r = sim.simulate(parsed, np.random.default_rng(spec.seed if seed is None else seed))
    table = Table(title=f"simulated: {r.config}", show_header=False)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    ms = 1000.0
    for name, value in [
        ("configuration", parsed.describe()),
        ("world size (GPUs)", f"{r.world_size}"),
        ("global batch", f"{r.global_batch}"),
        ("iteration mean ± std", f"{r.iter_mean_s * ms:,.2f} ± {r.iter_std_s * ms:,.2f} ms"),
        (
            "iteration p5 / p50 / p95",
            f"{r.iter_p5_s * ms:,.2f} / {r.iter_p50_s * ms:,.2f} / {r.iter_p95_s * ms:,.2f} ms",
        ),
        ("forward (slowest VM)", f"{r.fw_mean_s * ms:,.2f} ms"),
        ("backward (slowest VM)", f"{r.bwd_mean_s * ms:,.2f} ms"),
        ("optimizer step", f"{r.step_mean_s * ms:,.2f} ms"),
        ("parameter exchange end t_pe", f"{r.pe_mean_s * ms:,.2f} ms after backward starts"),
        ("communication not hidden", f"{r.comm_exposed_mean_s * ms:,.2f} ms"),
        ("throughput", f"{r.throughput_samples_per_s:,.1f} samples/s"),
        ("transfers / b_cap", f"{r.n_transfers} / {r.b_cap_bytes_per_s / 1e9:,.2f} GB/s"),
        ("slowest group", r.slowest_group),
        ("iteration model", r.iteration_model),
        ("network", probed.summary() if probed is not None else "the model's (an average allocation)"),
    ]:
        table.add_row(name, value)
    out.print(table)
    for gpu, where in sorted(inputs.sources.items()):
        out.print(f"profile {gpu}: {where}")
    for warning in inputs.warnings:
        err.print(styled("yellow", "warning:", f" {warning}"), soft_wrap=True)
    out.print(f"bandwidth model: {inputs.net_source}")
    show_network_sources(inputs.net_notes)
