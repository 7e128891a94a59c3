"""An EMULATED cloud for SkyPilot in tests: a ``sky`` command (tests/sky_stub.py in the .venv-sky interpreter)
with SkyPilot's catalog seeded from srifty's bundled AWS catalog (which was taken from SkyPilot's) and an AWS
zone mapping for an imaginary account, in a folder of the test's own."""

from __future__ import annotations

import csv
import json
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

SKY_PYTHON = REPO / ".venv-sky" / "bin" / "python"
AWS_CATALOG = REPO / "src" / "srifty" / "catalog" / "data" / "v1" / "aws_gpu_vms.csv"
SKY_COLUMNS = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price",
               "SpotPrice", "Region", "AvailabilityZone"]  # fmt: skip


def imaginary_zone_name(zone_id: str, region: str) -> str:
    """An account's name for an AWS zone ID, made up for tests (``use1-az4`` → ``us-east-1c``; a Local Zone
    ``use1-atl2-az1`` → ``us-east-1-atl-2a``): AWS shuffles the letters per account, so do we."""
    local = re.fullmatch(r"[a-z0-9]+-([a-z]+)(\d+)-az(\d+)", zone_id)
    if local:
        return f"{region}-{local.group(1)}-{local.group(2)}{'abcdef'[int(local.group(3)) - 1]}"
    number = int(zone_id.rsplit("az", 1)[1])
    return f"{region}{'abcdefgh'[(number + 1) % 8]}"


def seed_catalog(runtime_dir: Path, without: Iterable[str] = ()) -> Path:
    """SkyPilot's ``aws/vms.csv`` and an ``az_mappings`` file under ``runtime_dir/.sky/catalogs/v8/aws``, and its
    ``common/accelerators.csv`` (GPU names); the types in ``without`` are left out (a type SkyPilot's catalog
    does not have)."""
    folder = runtime_dir / ".sky" / "catalogs" / "v8" / "aws"
    folder.mkdir(parents=True, exist_ok=True)
    left_out = set(without)
    with AWS_CATALOG.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["InstanceType"] not in left_out]
    with (folder / "vms.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=SKY_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({**r, "GpuInfo": ""} for r in rows)
    common = runtime_dir / ".sky" / "catalogs" / "v8" / "common"  # SkyPilot's canonical accelerator names
    common.mkdir(parents=True, exist_ok=True)
    with (common / "accelerators.csv").open("w", newline="") as handle:
        table = csv.writer(handle)
        table.writerow(["AcceleratorName", "Clouds"])
        table.writerows((name, "['AWS']") for name in sorted({r["AcceleratorName"] for r in rows}))
    zones = sorted({(r["Region"], r["AvailabilityZone"]) for r in rows})
    mapping = folder / "az_mappings-test.csv"
    with mapping.open("w", newline="") as handle:
        table = csv.writer(handle)
        table.writerow(["AvailabilityZoneName", "AvailabilityZone"])
        table.writerows((imaginary_zone_name(z, r), z) for r, z in zones)
    return mapping


@dataclass
class SkyEnv:
    """The emulated cloud's folder: ``sky`` (the executable), SkyPilot's runtime folder, and the stub's state."""

    root: Path

    @property
    def sky(self) -> Path:
        return self.root / "bin" / "sky"

    @property
    def runtime(self) -> Path:
        return self.root / "runtime"

    @property
    def state(self) -> Path:
        return self.root / "state"

    def clusters(self) -> dict[str, dict[str, object]]:
        path = self.state / "clusters.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def calls(self) -> list[list[str]]:
        path = self.state / "calls.jsonl"
        return [json.loads(line)["argv"] for line in path.read_text().splitlines()] if path.exists() else []


def make_sky_env(root: Path, without: Iterable[str] = (), fail: str | None = None) -> SkyEnv:
    """An emulated cloud in ``root``; ``fail`` (``VERB:CLUSTER``) makes that sky call fail."""
    env = SkyEnv(root)
    seed_catalog(env.runtime, without)
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    lines = [
        "#!/bin/sh",
        f"export SKY_RUNTIME_DIR='{env.runtime}' SKY_STUB_STATE='{env.state}' HOME='{root / 'home'}'",
        "export AWS_EC2_METADATA_DISABLED=true",
        *([f"export SKY_STUB_FAIL='{fail}'"] if fail else []),
        f"exec '{SKY_PYTHON}' '{REPO / 'tests' / 'sky_stub.py'}' \"$@\"",
    ]
    env.sky.write_text("\n".join(lines) + "\n")
    env.sky.chmod(env.sky.stat().st_mode | stat.S_IXUSR)
    return env


def stub_bin(folder: Path, name: str, script: Path) -> Path:
    """An executable ``folder/name`` that runs ``script`` with this test's Python."""
    import sys

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{script}' \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def path_with(folder: Path) -> str:
    """``PATH`` with ``folder`` first."""
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
