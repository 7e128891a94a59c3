"""Build a trainable workload (model, synthetic batches, loss) from a model name. Needs torch.

Inputs are synthetic, as in the paper's evaluation (synthetic ImageNet, random tokens): the profiler
measures compute, not data loading.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from srifty.compute.hf_configs import require_hf_config
from srifty.compute.names import HF_MODELS, ModelKind, parse_model_name
from srifty.errors import ProfileError

# torchvision models whose natural input is not 224x224.
NATIVE_IMAGE_SIZE = {"inception_v3": 299}
# Minimum input size some torchvision models accept (their stride or pooling needs it).
MIN_IMAGE_SIZE = {"inception_v3": 75, "alexnet": 63}


@dataclass
class Workload:
    """A model with its synthetic batch maker and loss.

    Attributes:
        make_batch: ``make_batch(batch_size) -> (inputs, target)`` on the CPU. ``inputs`` is a tensor, a
            tuple of positional tensors, or a dict of keyword tensors.
        loss_fn: ``loss_fn(output, target) -> scalar tensor``.
        input_description: what one sample is, for the profile file.
    """

    name: str
    kind: ModelKind
    model: nn.Module
    make_batch: Callable[[int], tuple[Any, Any]]
    loss_fn: Callable[[Any, Any], torch.Tensor]
    input_description: str


def call_model(model: nn.Module, inputs: Any) -> Any:
    """Call ``model`` with a tensor, positional tuple, or keyword dict of inputs."""
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, tuple | list):
        return model(*inputs)
    return model(inputs)


def to_device(obj: Any, device: torch.device) -> Any:
    """Move tensors (possibly nested in tuples, lists and dicts) to ``device``."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=True)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, tuple | list):
        return type(obj)(to_device(v, device) for v in obj)
    return obj


@dataclass(frozen=True)
class SampleSpec:
    """One synthetic input sample for a factory that returns a bare ``nn.Module``.

    Attributes:
        shape: the sample's dimensions, without the batch (``(3, 224, 224)`` for an image).
        vocab: ``None`` for float inputs (standard normal); else integer token ids in ``[0, vocab)``.
    """

    shape: tuple[int, ...]
    vocab: int | None = None

    def describe(self) -> str:
        """``3x224x224 float32`` or ``128 token ids < 30522``."""
        dims = "x".join(str(d) for d in self.shape)
        return f"{dims} float32" if self.vocab is None else f"{dims} token ids < {self.vocab}"


def parse_sample_shape(text: str) -> tuple[int, ...]:
    """``"3x224x224"`` or ``"3,224,224"`` → ``(3, 224, 224)``.

    Raises:
        ProfileError: not positive integers separated by ``x`` or ``,``, or absurdly large.
    """
    parts = [p.strip() for p in text.lower().replace(",", "x").split("x")]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ProfileError(
            f"--input-shape '{text}' is not a sample shape; give positive integers separated by x, for example "
            "3x224x224 (an image) or 128 (a sequence)."
        )
    shape = tuple(int(p) for p in parts)
    if len(shape) > 8 or int(np.prod(shape, dtype=np.float64)) > 2**31:
        raise ProfileError(f"--input-shape '{text}' has {len(shape)} dimensions and too many elements for one sample.")
    return shape


def build_workload(
    name: str,
    *,
    seq_len: int = 128,
    image_size: int | None = None,
    num_classes: int = 1000,
    seed: int = 0,
    sample: SampleSpec | None = None,
) -> Workload:
    """Build the workload ``name`` with seeded weights.

    Args:
        name: a torchvision model, ``hf:<config>`` or ``package.module:function``.
        seq_len: tokens per sample for ``hf:`` models.
        image_size: pixels per side for torchvision models; defaults to the model's native size.
        num_classes: classifier width for torchvision models.
        seed: seeds the weights and the synthetic data.
        sample: for a factory that returns a bare ``nn.Module``: one input sample's shape (and vocabulary
            for token ids). Only for ``package.module:function`` models.

    Raises:
        ProfileError: unknown name, a factory that cannot be imported or returns the wrong shape, a bare
            module without ``sample``, or an image size the model cannot take.
    """
    ref = parse_model_name(name)
    if sample is not None and ref.kind != "factory":
        raise ProfileError(
            f"--input-shape is for package.module:function models that return a bare nn.Module; {name} "
            "makes its own inputs (use --image-size or --seq-len)."
        )
    torch.manual_seed(seed)
    if ref.kind == "torchvision":
        return _torchvision(ref.key, image_size, num_classes)
    if ref.kind == "hf":
        return _huggingface(ref.key, seq_len)
    return _factory(ref.key, sample)


def _torchvision(name: str, image_size: int | None, num_classes: int) -> Workload:
    import torchvision

    size = image_size or NATIVE_IMAGE_SIZE.get(name, 224)
    if size < MIN_IMAGE_SIZE.get(name, 32):
        raise ProfileError(f"{name} needs images of at least {MIN_IMAGE_SIZE.get(name, 32)} pixels, got {size}.")
    kwargs: dict[str, Any] = {"weights": None, "num_classes": num_classes}
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=False)
    if name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=False)
    model = torchvision.models.get_model(name, **kwargs)

    def make_batch(batch_size: int) -> tuple[Any, Any]:
        return torch.randn(batch_size, 3, size, size), torch.randint(0, num_classes, (batch_size,))

    return Workload(name, "torchvision", model, make_batch, nn.CrossEntropyLoss(), f"3x{size}x{size} image")


def _huggingface(key: str, seq_len: int) -> Workload:
    """A ``transformers`` language model built from its configuration (srifty's short names, or any config
    :func:`~srifty.compute.hf_configs.require_hf_config` finds), fed random token ids; its own loss."""
    import transformers

    if key in HF_MODELS:
        family, overrides = HF_MODELS[key]
        kinds = {
            "bert": "BertForMaskedLM",
            "gpt2": "GPT2LMHeadModel",
            "xlm": "XLMWithLMHeadModel",
            "llama": "LlamaForCausalLM",
        }
        fields: dict[str, Any] = {"model_type": family, "architectures": [kinds[family]], **overrides}
        source = f"srifty's hf:{key}"
    else:
        found = require_hf_config(key)
        fields, source = dict(found.fields), found.source
    config, model_class = _hf_model_class(transformers, key, fields, source)
    model: nn.Module = model_class(config)
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    if vocab < 1:
        raise ProfileError(f"hf:{key} ({source}) has no vocab_size; srifty feeds language models token ids.")
    limit = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    if limit is not None and seq_len > limit:
        raise ProfileError(f"hf:{key} takes at most {limit} tokens per sample; got seq_len={seq_len}.")
    seq2seq = bool(getattr(config, "is_encoder_decoder", False))

    def make_batch(batch_size: int) -> tuple[Any, Any]:
        ids = torch.randint(0, vocab, (batch_size, seq_len))
        inputs = {"input_ids": ids, "labels": ids}  # an encoder-decoder shifts the labels into its decoder
        if seq2seq and getattr(config, "decoder_start_token_id", None) is None:
            inputs["decoder_input_ids"] = ids
        return inputs, None

    def loss_fn(output: Any, _target: Any) -> torch.Tensor:
        return output.loss

    return Workload(f"hf:{key}", "hf", model, make_batch, loss_fn, f"{seq_len} tokens")


#: Heads srifty can train from token ids alone (its own labels), tried in this order when a config names none.
_LM_HEADS = ("AutoModelForCausalLM", "AutoModelForMaskedLM", "AutoModelForSeq2SeqLM")


def _hf_model_class(transformers: Any, key: str, fields: dict[str, Any], source: str) -> tuple[Any, Any]:
    """The ``transformers`` config and the class that builds a trainable language model from it.

    Raises:
        ProfileError: a model type this ``transformers`` does not know, or no language-model head for it.
    """
    fields = dict(fields)
    model_type = fields.pop("model_type")
    architectures = fields.pop("architectures", None) or []
    for unused in ("_name_or_path", "transformers_version", "auto_map"):
        fields.pop(unused, None)
    try:
        config = transformers.AutoConfig.for_model(model_type, **fields)
    except (ValueError, KeyError) as err:
        raise ProfileError(
            f"hf:{key} ({source}): transformers {transformers.__version__} cannot build model type "
            f"'{model_type}' ({err}); upgrade transformers or choose another model."
        ) from None
    named = [getattr(transformers, a, None) for a in architectures]
    trainable = [c for c, a in zip(named, architectures, strict=True) if c is not None and a.endswith(_LM_SUFFIXES)]
    if trainable:
        return config, trainable[0]
    for head in _LM_HEADS:
        auto = getattr(transformers, head)
        if type(config) in auto._model_mapping:
            return config, auto._model_mapping[type(config)]
    raise ProfileError(
        f"hf:{key} ({source}): srifty trains language models from random token ids, and '{model_type}' "
        f"({', '.join(architectures) or 'no architecture named'}) has no causal, masked or sequence-to-sequence "
        "language-model head in transformers; profile it as package.module:function instead."
    )


_LM_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForMaskedLM", "ForConditionalGeneration", "WithLMHeadModel")


def _factory(path: str, sample: SampleSpec | None = None) -> Workload:
    module_name, _, func_name = path.partition(":")
    module = _import_factory_module(module_name, path)
    factory = getattr(module, func_name, None)
    if not callable(factory):
        raise ProfileError(f"'{module_name}' has no function '{func_name}' (model '{path}').")
    try:
        made = factory()
    except Exception as err:  # the user's code: its error is theirs to fix, shown without a traceback
        first = str(err).splitlines()[0] if str(err) else ""
        raise ProfileError(f"calling '{path}()' failed: {type(err).__name__}: {first}. Fix the factory.") from None
    if isinstance(made, nn.Module):
        return _bare_module(path, made, sample)
    if not (isinstance(made, tuple) and len(made) == 3 and isinstance(made[0], nn.Module)):
        raise ProfileError(
            f"'{path}' must return an nn.Module (then give --input-shape) or (model, make_batch, loss_fn) with "
            f"model an nn.Module; got {type(made).__name__}."
        )
    model, make_batch, loss_fn = made
    return Workload(path, "factory", model, make_batch, loss_fn, "factory-defined sample")


def _import_factory_module(module_name: str, path: str) -> Any:
    """Import the factory's module from ``sys.path`` or, as ``python -m`` would, from the current folder (the
    ``srifty`` command's own ``sys.path`` starts at its script's folder, not there).

    Raises:
        ProfileError: neither has it, or importing it failed.
    """
    here = os.getcwd()
    if here not in sys.path:
        sys.path.append(here)  # after PYTHONPATH and installed packages, which keep precedence
    try:
        return importlib.import_module(module_name)
    except ImportError as err:
        raise ProfileError(
            f"cannot import '{module_name}' for model '{path}': {err}. srifty looks for it on PYTHONPATH, among "
            f"installed packages and in the current folder ({here}); run srifty from the folder that holds "
            f"{module_name.split('.')[0]}/ (or {module_name.split('.')[0]}.py), or add that folder to PYTHONPATH."
        ) from None


def _bare_module(path: str, model: nn.Module, sample: SampleSpec | None) -> Workload:
    """A workload around a bare module: synthetic inputs of ``sample``'s shape; cross-entropy against
    random labels when the output is ``(batch, classes)``, else the mean square of the output (same
    backward pass, no labels needed)."""
    if sample is None:
        raise ProfileError(
            f"'{path}' returns a bare nn.Module, so srifty needs the shape of one input sample: add --input-shape "
            "(for example --input-shape 3x224x224 for images, or --input-shape 128 --input-vocab 30522 for token "
            "ids), or make the factory return (model, make_batch, loss_fn)."
        )

    def inputs(batch_size: int) -> torch.Tensor:
        if sample.vocab is None:
            return torch.randn(batch_size, *sample.shape)
        return torch.randint(0, sample.vocab, (batch_size, *sample.shape))

    try:
        with torch.no_grad():
            probe = model(inputs(2))
    except Exception as err:  # the user's model: any error means the shape does not fit it
        raise ProfileError(
            f"'{path}' cannot take inputs of shape (batch, {', '.join(map(str, sample.shape))}): "
            f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}. Fix --input-shape."
        ) from None
    if not isinstance(probe, torch.Tensor) or not probe.is_floating_point():
        raise ProfileError(
            f"'{path}' returns {type(probe).__name__} outputs, not one float tensor; make the factory return "
            "(model, make_batch, loss_fn) so srifty knows the loss."
        )
    if probe.dim() == 2:
        classes = int(probe.shape[1])

        def make_batch(batch_size: int) -> tuple[Any, Any]:
            return inputs(batch_size), torch.randint(0, classes, (batch_size,))

        return Workload(path, "factory", model, make_batch, nn.CrossEntropyLoss(), sample.describe())

    def make_unlabelled(batch_size: int) -> tuple[Any, Any]:
        return inputs(batch_size), None

    def mean_square(output: Any, _target: Any) -> torch.Tensor:
        return output.float().pow(2).mean()

    return Workload(path, "factory", model, make_unlabelled, mean_square, sample.describe())
