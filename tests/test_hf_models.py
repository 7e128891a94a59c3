"""Model names a new user writes (issue 29, item 4): any Hugging Face model with a configuration on this
machine, "did you mean" for typos in every command, precision carried into suggested commands, unknown GPUs
in ``filter`` and options that do nothing refused, factory modules found in the current folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from srifty.compute.hf_configs import bundled_hf_ids, find_hf_config, missing_hf_config, require_hf_config
from srifty.compute.names import parse_model_name
from srifty.errors import ProfileError

TINY_LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "vocab_size": 128,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
}


def spec(tmp_path: Path, **fields: object) -> Path:
    path = tmp_path / "job.yaml"
    base = {"model": "resnet50", "global_batch": 64, "iterations": 10, "goal": "min_cost", "region": "us-east-1"}
    path.write_text(yaml.safe_dump({**base, **fields}))
    return path


def test_hf_names_are_hub_ids_paths_or_srifty_short_names() -> None:
    assert parse_model_name("hf:bert-base").key == "bert-base"
    assert parse_model_name("hf:meta-llama/Llama-2-7b-hf").kind == "hf"
    assert parse_model_name("hf:./configs/mine.json").key == "./configs/mine.json"
    with pytest.raises(ProfileError, match="Did you mean 'hf:bert-base'"):
        parse_model_name("hf:bert base")
    with pytest.raises(ProfileError, match="Did you mean 'resnet50'"):
        parse_model_name("resnet5O")


def test_configs_come_from_the_bundle_a_file_or_the_hugging_face_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = require_hf_config("bert-base-uncased")  # an alias the Hub still redirects
    assert "google-bert/bert-base-uncased" in found.source and found.fields["hidden_size"] == 768
    assert find_hf_config("meta-llama/Llama-2-7b-hf") is not None
    config = tmp_path / "tiny" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(TINY_LLAMA))
    assert require_hf_config(str(config.parent)).fields["hidden_size"] == 32
    assert require_hf_config(str(config)).source == f"file {config}"
    # The Hugging Face cache layout: models--org--name/refs/main names the snapshot.
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    repo = tmp_path / "hub" / "models--acme--tiny-llama"
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123" / "config.json").write_text(json.dumps(TINY_LLAMA))
    assert require_hf_config("acme/tiny-llama").source.startswith("Hugging Face cache")
    message = missing_hf_config("google-bert/bert-base-uncsed")
    assert "Did you mean 'google-bert/bert-base-uncased'" in message and str(tmp_path / "hub") in message
    assert "never downloads" in message and "hf:/path/to/config.json" in message
    with pytest.raises(ProfileError, match="no configuration for hf:acme/absent"):
        require_hf_config("acme/absent")


def test_any_language_model_config_builds_and_trains_a_step(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from srifty.compute.measure.workloads import build_workload

    config = tmp_path / "config.json"
    config.write_text(json.dumps(TINY_LLAMA))
    workload = build_workload(f"hf:{config}", seq_len=8)
    inputs, target = workload.make_batch(2)
    loss = workload.loss_fn(workload.model(**inputs), target)
    loss.backward()
    assert type(workload.model).__name__ == "LlamaForCausalLM" and float(loss.detach()) > 0
    vision = tmp_path / "vit.json"
    vision.write_text(json.dumps({"model_type": "vit", "architectures": ["ViTForImageClassification"]}))
    with pytest.raises(ProfileError, match="no causal, masked or sequence-to-sequence language-model head"):
        build_workload(f"hf:{vision}")


@pytest.mark.slow
def test_every_bundled_config_has_its_published_parameter_count() -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from srifty.compute.hf_configs import _bundled

    records, _ = _bundled()
    assert len(bundled_hf_ids()) == len(records) >= 20
    for hub_id, record in records.items():
        fields = dict(record["config"])
        config = transformers.AutoConfig.for_model(fields.pop("model_type"), **fields)
        with torch.device("meta"):  # no memory: a 13 B model builds in a second
            model = getattr(transformers, fields["architectures"][0])(config)
        count = sum(p.numel() for p in model.parameters())
        assert count == pytest.approx(record["params_published"], rel=0.05), hub_id


def test_a_misspelt_model_gets_did_you_mean_in_plan_and_simulate(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = spec(tmp_path, model="resnet5O")
    for args in (["plan", str(path)], ["simulate", str(path), "--config", "1xg4dn.xlarge@64"]):
        code, _, err = cli(*args)
        assert code == 2 and "model.name: unknown model 'resnet5O'. Did you mean 'resnet50'" in err, err
        assert "g4dn" not in err  # not a suggestion to rent a VM and profile a model that does not exist


def test_suggested_profile_commands_carry_the_precision_and_sequence_length(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    model = {"name": "hf:bert-base-uncased", "precision": "bf16", "seq_len": 256}
    code, _, err = cli("plan", str(spec(tmp_path, model=model)))
    flat = " ".join(err.split())
    assert (
        code == 2 and "srifty profile --model hf:bert-base-uncased --device cpu --precision bf16 --seq-len 256" in flat
    )
    assert "g4dn" not in flat  # T4 has no bf16: the GPU suggested can run it
    code, _, err = cli("plan", str(spec(tmp_path, model={"name": "hf:acme/unknown-model"})))
    assert code == 2 and "no configuration for hf:acme/unknown-model" in err
    code, _, err = cli("plan", str(spec(tmp_path, model={"name": "resnet50", "precision": "bf16"})))
    assert code == 2 and "none bundled in bf16 (bundled: fp32" in " ".join(err.split())


def test_unknown_gpus_in_the_filter_and_idle_options_are_refused(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = spec(tmp_path, filter={"gpus": ["T4", "A10"]})
    code, _, err = cli("plan", str(path))
    assert code == 2 and "filter.gpus: 'A10' is not sold in us-east-1" in err and "A10G" in err
    code, _, err = cli("profile", "--model", "resnet18", "--seq-len", "64")
    assert code == 2 and "--seq-len does nothing without an hf: model" in err
    code, _, err = cli("profile", "--model", "resnet18", "--device", "cuda", "--memory-limit", "1GiB")
    assert code == 2 and "--memory-limit does nothing without --device cpu" in err


def test_a_factory_module_is_found_in_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from srifty.compute.measure.workloads import SampleSpec, build_workload

    (tmp_path / "wt29_models").mkdir()
    (tmp_path / "wt29_models" / "__init__.py").write_text("")
    (tmp_path / "wt29_models" / "nets.py").write_text("import torch\n\ndef net():\n    return torch.nn.Linear(4, 2)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    workload = build_workload("wt29_models.nets:net", sample=SampleSpec((4,)))
    assert workload.model.in_features == 4
    with pytest.raises(ProfileError, match="run srifty from the folder that holds wt29_absent/"):
        build_workload("wt29_absent.nets:net", sample=SampleSpec((4,)))
