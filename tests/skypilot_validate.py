"""Validate SkyPilot task YAML files with SkyPilot's own schemas. Runs in a venv where skypilot is installed.

Usage: ``python skypilot_validate.py FILE...``; exits 1 with the first schema error.
"""

import sys

import yaml
from sky.utils import common_utils, schemas


def main() -> None:
    for path in sys.argv[1:]:
        with open(path) as handle:
            task = yaml.safe_load(handle)
        common_utils.validate_schema(task, schemas.get_task_schema(), f"{path}: invalid task YAML: ")
        common_utils.validate_schema(task["resources"], schemas.get_resources_schema(), f"{path}: invalid resources: ")
    print(f"{len(sys.argv) - 1} task files valid")


if __name__ == "__main__":
    main()
