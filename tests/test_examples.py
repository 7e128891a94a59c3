"""The examples say what they are: every file a command in examples/ or the README names exists."""

from __future__ import annotations

import re

import pytest

from tests.conftest import EXAMPLES, REPO

DOCUMENTS = sorted([*EXAMPLES.glob("*.py"), *EXAMPLES.glob("*.yaml"), EXAMPLES / "README.md", REPO / "README.md"])
MENTION = re.compile(r"\bexamples/[A-Za-z0-9_.\-/]+\.(?:yaml|py)\b")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_example_file_a_document_names_exists(document) -> None:  # type: ignore[no-untyped-def]
    named = set(MENTION.findall(document.read_text(encoding="utf-8")))
    missing = sorted(name for name in named if not (REPO / name).is_file())
    assert not missing, f"{document.name} names files that do not exist: {missing}"


def test_the_tiny_training_script_documents_a_spec_that_runs_locally() -> None:
    from srifty.spec import load_spec

    text = (EXAMPLES / "train_tiny.py").read_text()
    spec_name = re.search(r"srifty run (examples/\S+\.yaml)", text)
    assert spec_name is not None
    spec = load_spec(REPO / spec_name.group(1))
    assert all(p.is_file() for p in spec.model.profiles)
