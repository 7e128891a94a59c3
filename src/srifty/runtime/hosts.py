"""Host files: the VMs a job may run on, one per line, and mapping a configuration onto them.

The format follows the DeepSpeed/MPI host file (one machine per line, ``#`` starts a comment), with the
instance type and market in place of ``slots=`` (a VM runs one process per GPU of its type)::

    # address      instance type   market      options
    10.0.0.11      g4dn.12xlarge   spot
    10.0.0.12      g4dn.12xlarge   spot        user=ubuntu port=2222
    gpu-node-7     p3.8xlarge      on-demand

``address`` is an IPv4/IPv6 address or a host name; ``market`` is ``spot`` or ``on_demand`` (the spec's
spellings; ``on_demand`` when left out); ``user=`` and ``port=`` are for the ``ssh`` launcher; ``cpu=CORES``
(local and netns launchers only, root) emulates a slower VM on this machine by a CPU quota of that many
cores on every process of the host (:mod:`srifty.runtime.cpu_quota`). Every value
is checked before it reaches ssh or torchrun: a bad line is a :class:`~srifty.errors.SpecError` naming the
file, the line and what to write instead.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from srifty.catalog import Catalog, InstanceType, load_catalog
from srifty.errors import CatalogError, SpecError
from srifty.runtime.cpu_quota import check_cores
from srifty.vocab import Config

HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
USER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")
MARKETS = {"spot": "spot", "on_demand": "on_demand", "ondemand": "on_demand"}
FORMAT = "ADDRESS INSTANCE_TYPE [MARKET] [user=NAME] [port=N] [cpu=CORES]"


@dataclass(frozen=True)
class Host:
    """One VM of a host file: where it is, what it is, and how to log in to it (ssh launcher)."""

    address: str
    instance: InstanceType
    market: str = "on_demand"
    user: str | None = None
    port: int | None = None
    line: int = 0
    #: An emulated VM's CPU quota in cores (testbed and local launchers), ``None``: the machine's speed.
    cpu: float | None = None

    @property
    def gpus(self) -> int:
        """Processes this host runs: one per GPU of its instance type."""
        return self.instance.gpus_per_vm

    @property
    def key(self) -> tuple[str, str]:
        """``(instance type, market)``: what the planner calls a candidate."""
        return (self.instance.name, self.market)

    def describe(self) -> str:
        """``10.0.0.11 (g4dn.12xlarge, spot)``."""
        return f"{self.address} ({self.instance.name}, {self.market})"


def check_address(text: str) -> str:
    """``text`` if it is an IP address or a host name (no option-like or shell characters).

    Raises:
        SpecError: anything else.
    """
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    if HOSTNAME.fullmatch(text) and ".." not in text:
        return text
    raise SpecError(f"'{text}' is not an IP address or a host name (letters, digits, '.' and '-').")


def _parse_line(text: str, number: int, source: str, region: str, cloud: str, catalog: Catalog) -> Host | None:
    body = text.split("#", 1)[0].strip()
    if not body:
        return None
    where = f"{source} line {number}"
    fields = body.split()
    positional = [f for f in fields if "=" not in f]
    options = [f for f in fields if "=" in f]
    if len(positional) < 2 or len(positional) > 3 or fields[: len(positional)] != positional:
        raise SpecError(
            f"{where}: '{body}' is not a host line; write {FORMAT}, for example '10.0.0.11 g4dn.xlarge spot'."
        )
    try:
        address = check_address(positional[0])
    except SpecError as err:
        raise SpecError(f"{where}: {err}") from None
    try:
        instance = catalog.get(positional[1], region=region, cloud=cloud)
    except CatalogError as err:
        raise SpecError(f"{where}: {err}") from None
    market = "on_demand"
    if len(positional) == 3:
        key = positional[2].strip().lower().replace("-", "_")
        if key not in MARKETS:
            raise SpecError(f"{where}: market '{positional[2]}' is neither spot nor on_demand.")
        market = MARKETS[key]
    user: str | None = None
    port: int | None = None
    cpu: float | None = None
    for option in options:
        name, _, value = option.partition("=")
        if name == "user" and USER.fullmatch(value):
            user = value
        elif name == "port" and value.isdigit() and 1 <= int(value) <= 65535:
            port = int(value)
        elif name == "cpu" and _number(value) is not None:
            cpu = check_cores(float(value), f"{where}: cpu={value}")
        elif name == "slots":
            raise SpecError(
                f"{where}: 'slots=' is not used: a host runs one process per GPU of its instance type "
                f"({instance.name} has {instance.gpus_per_vm}). Remove it."
            )
        else:
            raise SpecError(
                f"{where}: option '{option}' is not user=NAME (a login name), port=N (1 to 65535) or cpu=CORES (an "
                f"emulated VM's CPU quota); write {FORMAT}."
            )
    return Host(address, instance, market, user, port, number, cpu)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None  # NaN is not a number of cores


def parse_hostfile(
    text: str, region: str, cloud: str = "aws", catalog: Catalog | None = None, source: str = "host file"
) -> tuple[Host, ...]:
    """The hosts of a host file's text, checked against the catalog (``region``/``cloud`` of the spec).

    Raises:
        SpecError: a malformed line, an unknown instance type or market, a duplicate address, or no host.
    """
    cat = catalog or load_catalog()
    hosts = [
        host
        for number, line in enumerate(text.splitlines(), start=1)
        if (host := _parse_line(line, number, source, region, cloud, cat)) is not None
    ]
    if not hosts:
        raise SpecError(f"{source} lists no host; write one VM per line: {FORMAT}.")
    seen: dict[str, int] = {}
    for host in hosts:
        if host.address in seen:
            raise SpecError(
                f"{source} line {host.line}: address {host.address} is already on line {seen[host.address]}; "
                "every VM must appear once."
            )
        seen[host.address] = host.line
    return tuple(hosts)


def load_hostfile(
    path: str | Path, region: str, cloud: str = "aws", catalog: Catalog | None = None
) -> tuple[Host, ...]:
    """:func:`parse_hostfile` of a file.

    Raises:
        SpecError: the file is missing or unreadable, or as :func:`parse_hostfile`.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"cannot read host file '{source}': {err}. Give a text file, one VM per line.") from None
    return parse_hostfile(text, region, cloud, catalog, source=str(source))


def inventory(hosts: Iterable[Host]) -> dict[tuple[str, str], int]:
    """How many hosts of each ``(instance type, market)``."""
    return dict(Counter(h.key for h in hosts))


def assign_hosts(config: Config, hosts: Sequence[Host]) -> list[Host]:
    """The hosts that run ``config``, group by group (so node ``i``'s ranks follow the rank layout), each
    group taking the first hosts of its type and market in host-file order.

    Raises:
        SpecError: too few hosts of a type and market for the configuration.
    """
    chosen: list[Host] = []
    for group in config.groups:
        free = [h for h in hosts if h.key == (group.instance.name, group.market) and h not in chosen]
        if len(free) < group.count:
            have = inventory(hosts)
            listed = ", ".join(f"{n}× {t} ({m})" for (t, m), n in sorted(have.items())) or "none"
            raise SpecError(
                f"too few hosts for {config.notation()}: it needs {group.count} {group.instance.name} "
                f"({group.market}) VM(s), the host file has {len(free)} available (hosts: {listed}). Add hosts, or "
                "plan over these (leave out --plan/--config)."
            )
        chosen += free[: group.count]
    return chosen
