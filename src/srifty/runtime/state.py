"""The state of a run (``RUN_DIR/run.json``) as one frozen, versioned value, and what a run is started with:
its options and how its hosts are reached.

* :class:`ClusterOptions`: how a multi-host run is watched (seconds) and checkpointed;
* :class:`LauncherSetup`: what ``srifty run --hosts`` was told about reaching the hosts, and the
  :class:`~srifty.runtime.launchers.Launcher` it makes;
* :class:`RunSetup`: everything the run was started with (spec, host file, launcher, command, folder, options);
  it never changes during the run;
* :class:`RunState`: the setup and where the run stands (configuration, hosts alive, iteration, checkpoint,
  spending, the owner mark of its processes). The runner writes a new one at every change (atomically);
  ``srifty run --resume`` reads the last one and hands it to the runner's constructor;
* :class:`LocalRunState`: the same for a run on this machine (``"runner": "local"`` in ``run.json``: no
  hosts, its options are :class:`LocalOptions`); :func:`load_run_state` reads either.

The file is kind ``run-state``, schema :data:`RUN_STATE_VERSION`; a file of another version is refused by name.
"""

from __future__ import annotations

import dataclasses
import socket
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self, TypeVar

from srifty.artifacts import read_json_artifact, write_json_artifact
from srifty.catalog import Catalog
from srifty.checkpoints import is_url
from srifty.errors import ArtifactError, OptionError, SpecError
from srifty.runtime.launchers import LAUNCHERS, Launcher, LocalLauncher, NetnsLauncher, SshLauncher
from srifty.runtime.progress import DEFAULT_WINDOW_S
from srifty.runtime.torchrun import STARTUP_TIMEOUT_S
from srifty.vocab import Config, parse_config

RUN_STATE_KIND = "run-state"
RUN_STATE_VERSION = 1
RUN_STATE_FILE = "run.json"


class _Record:
    """A flat frozen dataclass kept in ``run.json`` as an object of its fields (tuples as JSON lists)."""

    def to_dict(self) -> dict[str, Any]:
        """As ``run.json`` keeps it."""
        fields = dataclasses.asdict(self)  # type: ignore[call-overload]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}

    @classmethod
    def from_dict(cls: type[_R], doc: Mapping[str, Any]) -> _R:
        """From its ``run.json`` record."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc.items()})


_R = TypeVar("_R", bound=_Record)


class _StateFile(ABC):
    """What both run states share: how ``run.json`` is written, and how a damaged one is refused."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The ``run.json`` document (schema :data:`RUN_STATE_VERSION`)."""

    @classmethod
    @abstractmethod
    def read_fields(cls, doc: Mapping[str, Any]) -> Self:
        """The state from a ``run.json`` document (may raise ``KeyError``, ``TypeError``, ``ValueError``)."""

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], source: str = RUN_STATE_FILE) -> Self:
        """Read a ``run.json`` document.

        Raises:
            ArtifactError: a field is missing or of the wrong type, naming it and ``source``.
        """
        try:
            return cls.read_fields(doc)
        except KeyError as missing:
            raise ArtifactError(f"{source} has no field {missing}; it is damaged, so the run cannot resume.") from None
        except (TypeError, ValueError, AttributeError) as err:
            raise ArtifactError(f"{source} has a field of the wrong type ({err}); the run cannot resume.") from None

    def save(self, run_dir: Path) -> None:
        """Write ``RUN_DIR/run.json`` atomically."""
        write_json_artifact(run_dir / RUN_STATE_FILE, RUN_STATE_KIND, RUN_STATE_VERSION, self.to_dict())


@dataclass(frozen=True)
class ClusterOptions(_Record):
    """How a multi-host run is watched (seconds) and checkpointed."""

    ckpt_dir: str
    ckpt_every: int
    heartbeat_timeout_s: float = 10.0
    hang_timeout_s: float = 120.0
    lease_s: float = 30.0
    max_launches: int = 8
    endpoint_address: str = "127.0.0.1"
    check_timeout_s: float = 15.0
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    #: The throughput window (``K`` in the paper) the controller projects with.
    window_s: float = DEFAULT_WINDOW_S
    #: Names of this machine's environment variables to pass on to every host (ssh starts a clean one).
    forward_env: tuple[str, ...] = ()


@dataclass(frozen=True)
class LauncherSetup(_Record):
    """What ``srifty run --hosts`` was told about reaching the hosts (kept in ``run.json`` for ``--resume``)."""

    kind: str
    testbed: str | None = None
    ssh_key: str | None = None
    ssh_user: str | None = None
    ssh_port: int | None = None
    ssh_options: tuple[str, ...] = ()
    controller_address: str | None = None

    def check(self) -> None:
        """Refuse a launcher that does not exist, or one missing what it needs.

        Raises:
            OptionError: naming the option (``launcher``, ``testbed``, ``ssh_key``).
        """
        if self.kind not in LAUNCHERS:
            raise OptionError("launcher", f"must be one of {', '.join(LAUNCHERS)}, got '{self.kind}'.")
        if self.kind == "netns" and self.testbed is None:
            raise OptionError("testbed", "is needed with the netns launcher: give the network testbed's name.")
        if self.ssh_key is not None and not Path(self.ssh_key).is_file():
            raise OptionError("ssh_key", f"{self.ssh_key} does not exist; give a private key file.")

    def launcher(self, workdir: Path, namespaces: Mapping[str, str] | None = None) -> Launcher:
        """The launcher (``namespaces``: the testbed's, address → namespace, for ``netns``); an ssh launcher's
        commands run in ``workdir`` on the hosts."""
        self.check()
        if self.kind == "local":
            return LocalLauncher()
        if self.kind == "netns":
            return NetnsLauncher(dict(namespaces or {}))
        key = Path(self.ssh_key) if self.ssh_key else None
        return SshLauncher(
            identity=key, user=self.ssh_user, port=self.ssh_port, options=self.ssh_options, workdir=workdir
        )

    def address_towards(self, first_host: str | None) -> str:
        """The address workers report to off the testbed: the one given, 127.0.0.1 for the local launcher,
        else the local address this machine uses to reach the first host (no packet is sent).

        Raises:
            OptionError: no route to that host (option ``controller_address``).
        """
        if self.controller_address is not None:
            return self.controller_address
        if self.kind == "local":
            return "127.0.0.1"
        towards = first_host or "127.0.0.1"
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((towards, 9))
            except OSError as err:
                raise OptionError(
                    "controller_address", f"is needed: there is no route to host {towards} ({err}) to find it by."
                ) from None
            return str(probe.getsockname()[0])


@dataclass(frozen=True)
class RunSetup:
    """What a multi-host run was started with; the same for every launch and every resume.

    Attributes:
        spec_path: the job spec (absolute).
        hostfile_text: the host file's text (``None`` when it could not be read as a file).
        launcher: how the hosts are reached.
        train_command: the training command.
        cwd: the folder the run was started in: the training command's relative paths, and a relative
            ``--ckpt-dir``, are relative to it.
        options: timeouts and checkpointing.
    """

    spec_path: str
    hostfile_text: str | None
    launcher: LauncherSetup
    train_command: tuple[str, ...]
    cwd: str
    options: ClusterOptions

    def ckpt_location(self) -> str:
        """Where this machine finds the checkpoints: an fsspec URL as given, a local path against ``cwd``."""
        location = self.options.ckpt_dir
        if is_url(location) or Path(location).is_absolute():
            return location
        return str(Path(self.cwd) / location)


@dataclass(frozen=True)
class RunState(_StateFile):
    """Where a multi-host run stands (see the module docstring); written at every change, never edited.

    Attributes:
        config: the configuration in the paper's notation, with ``markets`` (type → market) and ``zone``.
        quotas: hosts alive per instance type and market, ``(type, market, count)``.
        lost: addresses of hosts lost; ``slow``: of hosts set aside as slow.
        controller_pid: the controller's process; ``mark``: the owner mark its processes carry on every host.
        checkpoint_step: the last checkpoint a worker reported (``None``: none yet).
        spent_usd: what the job cost up to the save; ``launch_hosts``: the hosts of the current launch.
        parallelism, checkpointing: how the configuration spreads the model (``Config.parallelism``,
            ``Config.checkpointing``; optional in ``run.json``: a file without them runs DDP).
    """

    setup: RunSetup
    started_unix: float
    config: str
    markets: Mapping[str, str]
    zone: str | None
    quotas: tuple[tuple[str, str, int], ...]
    controller_pid: int = 0
    mark: str = ""
    lost: tuple[str, ...] = ()
    slow: tuple[str, ...] = ()
    iteration: int = 0
    checkpoint_step: int | None = None
    spent_usd: float = 0.0
    launch_hosts: tuple[str, ...] = ()
    launches: int = 0
    finished: bool = False
    parallelism: str = "ddp"
    checkpointing: bool = False

    @classmethod
    def start(
        cls, setup: RunSetup, config: Config, quotas: Mapping[tuple[str, str], int], started_unix: float
    ) -> RunState:
        """The state of a run about to start on ``config``."""
        state = cls(setup, started_unix, *_config_fields(config), _quota_rows(quotas))
        return state.replace(parallelism=config.parallelism, checkpointing=config.checkpointing)

    def replace(self, **changes: Any) -> RunState:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    def advance(self, config: Config, quotas: Mapping[tuple[str, str], int] | None, **changes: Any) -> RunState:
        """A copy on ``config`` with ``quotas`` and the other ``changes``."""
        notation, markets, zone = _config_fields(config)
        rows = _quota_rows(quotas or {})
        sharding = {"parallelism": config.parallelism, "checkpointing": config.checkpointing}
        return self.replace(config=notation, markets=markets, zone=zone, quotas=rows, **sharding, **changes)

    def config_in(self, region: str, cloud: str, catalog: Catalog) -> Config:
        """The configuration, read back in the hosts' region and cloud, spreading the model as it did."""
        config = parse_config(self.config, region, cloud, catalog, dict(self.markets), self.zone)  # type: ignore[arg-type]
        return config.sharded(self.parallelism, self.checkpointing)  # type: ignore[arg-type]

    def quota_map(self) -> dict[tuple[str, str], int]:
        """Hosts alive per ``(instance type, market)``."""
        return {(t, m): n for t, m, n in self.quotas}

    def to_dict(self) -> dict[str, Any]:
        """The ``run.json`` document (schema :data:`RUN_STATE_VERSION`)."""
        setup = self.setup
        return {
            "spec_path": setup.spec_path,
            "hostfile_text": setup.hostfile_text,
            "launcher": setup.launcher.to_dict(),
            "train_command": list(setup.train_command),
            "cwd": setup.cwd,
            "options": setup.options.to_dict(),
            "finished": self.finished,
            "started_unix": self.started_unix,
            "controller_pid": self.controller_pid,
            "mark": self.mark,
            "config": self.config,
            "markets": dict(self.markets),
            "zone": self.zone,
            "quotas": [list(row) for row in self.quotas],
            "lost": list(self.lost),
            "slow": list(self.slow),
            "iteration": self.iteration,
            "checkpoint_step": self.checkpoint_step,
            "spent_usd": self.spent_usd,
            "launch_hosts": list(self.launch_hosts),
            "launches": self.launches,
            "parallelism": self.parallelism,
            "checkpointing": self.checkpointing,
        }

    @classmethod
    def read_fields(cls, doc: Mapping[str, Any]) -> Self:
        """Its fields from a ``run.json`` document (raises what reading a damaged one raises)."""
        setup = RunSetup(
            spec_path=str(doc["spec_path"]),
            hostfile_text=doc["hostfile_text"],
            launcher=LauncherSetup.from_dict(doc["launcher"]),
            train_command=tuple(str(part) for part in doc["train_command"]),
            cwd=str(doc["cwd"]),
            options=ClusterOptions.from_dict(doc["options"]),
        )
        return cls(
            setup,
            started_unix=float(doc["started_unix"]),
            config=str(doc["config"]),
            markets={str(k): str(v) for k, v in doc["markets"].items()},
            zone=doc.get("zone"),
            quotas=tuple((str(t), str(m), int(n)) for t, m, n in doc["quotas"]),
            controller_pid=int(doc.get("controller_pid") or 0),
            mark=str(doc["mark"]),
            lost=tuple(str(a) for a in doc.get("lost") or ()),
            slow=tuple(str(a) for a in doc.get("slow") or ()),
            iteration=int(doc.get("iteration") or 0),
            checkpoint_step=None if doc.get("checkpoint_step") is None else int(doc["checkpoint_step"]),
            spent_usd=float(doc.get("spent_usd") or 0.0),
            launch_hosts=tuple(str(a) for a in doc.get("launch_hosts") or ()),
            launches=int(doc.get("launches") or 0),
            finished=bool(doc.get("finished")),
            parallelism=str(doc.get("parallelism") or "ddp"),
            checkpointing=bool(doc.get("checkpointing")),
        )

    @classmethod
    def load(cls, run_dir: str | Path) -> RunState:
        """The state saved in ``RUN_DIR/run.json`` of a run across hosts.

        Raises:
            SpecError: there is none, or it is the state of a run on this machine.
            ArtifactError: it is damaged or of another schema version (named).
        """
        state = load_run_state(run_dir)
        if not isinstance(state, RunState):
            raise SpecError(
                f"{run_dir} holds a run on this machine, not across hosts; resume it with `srifty run --resume`."
            )
        return state


@dataclass(frozen=True)
class LocalOptions(_Record):
    """How a run on this machine is watched (seconds) and checkpointed (iterations)."""

    hang_timeout_s: float
    ckpt_every: int


@dataclass(frozen=True)
class LocalRunState(_StateFile):
    """Where a run on this machine stands (``run.json`` with ``"runner": "local"``); written at every launch and
    on every way out, never edited.

    Attributes:
        spec_path: the job spec (absolute); ``train_command``, ``cwd`` (the folder it was started in, which its
            relative paths are relative to) and ``options``: what the run was started with.
        config: the configuration in the paper's notation, in ``cloud`` / ``region``, with ``markets`` (type →
            market) and ``zone``.
        controller_pid: srifty's process; ``mark``: the owner mark its processes carry.
        checkpoint_step: the last checkpoint's iteration (0: none).
    """

    spec_path: str
    train_command: tuple[str, ...]
    cwd: str
    options: LocalOptions
    started_unix: float
    config: str
    cloud: str
    region: str
    markets: Mapping[str, str]
    zone: str | None
    controller_pid: int = 0
    mark: str = ""
    iteration: int = 0
    checkpoint_step: int = 0
    spent_usd: float = 0.0
    launches: int = 0
    finished: bool = False

    @classmethod
    def start(
        cls, spec_path: str, train_command: Sequence[str], cwd: str, options: LocalOptions, config: Config
    ) -> LocalRunState:
        """The state of a run about to start on ``config`` (the runner fills in the rest)."""
        notation, markets, zone = _config_fields(config)
        return cls(
            spec_path, tuple(train_command), cwd, options, 0.0, notation, config.cloud, config.region, markets, zone
        )

    def replace(self, **changes: Any) -> LocalRunState:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    def advance(self, config: Config, **changes: Any) -> LocalRunState:
        """A copy on ``config`` with the other ``changes``."""
        notation, markets, zone = _config_fields(config)
        return self.replace(
            config=notation, cloud=config.cloud, region=config.region, markets=markets, zone=zone, **changes
        )

    def config_in(self, catalog: Catalog) -> Config:
        """The configuration, read back."""
        return parse_config(self.config, self.region, self.cloud, catalog, dict(self.markets), self.zone)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """The ``run.json`` document (schema :data:`RUN_STATE_VERSION`)."""
        return {
            "spec_path": self.spec_path,
            "train_command": list(self.train_command),
            "cwd": self.cwd,
            "options": self.options.to_dict(),
            "runner": "local",
            "started_unix": self.started_unix,
            "controller_pid": self.controller_pid,
            "mark": self.mark,
            "config": self.config,
            "cloud": self.cloud,
            "region": self.region,
            "markets": dict(self.markets),
            "zone": self.zone,
            "iteration": self.iteration,
            "checkpoint_step": self.checkpoint_step,
            "spent_usd": self.spent_usd,
            "launches": self.launches,
            "finished": self.finished,
        }

    @classmethod
    def read_fields(cls, doc: Mapping[str, Any]) -> Self:
        """Its fields from a ``run.json`` document of a run on this machine (raises what reading a damaged one
        raises)."""
        return cls(
            spec_path=str(doc["spec_path"]),
            train_command=tuple(str(part) for part in doc["train_command"]),
            cwd=str(doc["cwd"]),
            options=LocalOptions(float(doc["options"]["hang_timeout_s"]), int(doc["options"]["ckpt_every"])),
            started_unix=float(doc["started_unix"]),
            config=str(doc["config"]),
            cloud=str(doc["cloud"]),
            region=str(doc["region"]),
            markets={str(k): str(v) for k, v in doc["markets"].items()},
            zone=doc.get("zone"),
            controller_pid=int(doc.get("controller_pid") or 0),
            mark=str(doc["mark"]),
            iteration=int(doc.get("iteration") or 0),
            checkpoint_step=int(doc.get("checkpoint_step") or 0),
            spent_usd=float(doc.get("spent_usd") or 0.0),
            launches=int(doc.get("launches") or 0),
            finished=bool(doc.get("finished")),
        )


def load_run_state(run_dir: str | Path) -> RunState | LocalRunState:
    """The state saved in ``RUN_DIR/run.json``: a run across hosts, or one on this machine.

    Raises:
        SpecError: there is none (not the folder of a ``srifty run``).
        ArtifactError: it is damaged or of another schema version (named).
    """
    path = Path(run_dir) / RUN_STATE_FILE
    if not path.is_file():
        raise SpecError(f"{run_dir} holds no run to resume (no run.json); give the --run-dir of a `srifty run`.")
    doc = read_json_artifact(path, RUN_STATE_KIND, RUN_STATE_VERSION)
    if doc.get("runner") == "local":
        return LocalRunState.from_dict(doc, str(path))
    return RunState.from_dict(doc, str(path))


def _config_fields(config: Config) -> tuple[str, dict[str, str], str | None]:
    return config.notation(), {g.instance.name: g.market for g in config.groups}, config.zone


def _quota_rows(quotas: Mapping[tuple[str, str], int]) -> tuple[tuple[str, str, int], ...]:
    return tuple((t, m, n) for (t, m), n in sorted(quotas.items()))
