"""Which model names the profiler knows, checked without importing torch.

Three kinds of names:

* a torchvision classification model, for example ``resnet50`` (list taken from torchvision 0.29);
* a Hugging Face ``transformers`` model, ``hf:<name>``: one of srifty's short names below, a Hub model id or a
  ``config.json`` (built from its configuration, no weight download; :mod:`srifty.compute.hf_configs`);
* the user's own factory, ``package.module:function``, returning ``(model, make_batch, loss_fn)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from srifty.errors import ProfileError, did_you_mean

TORCHVISION_MODELS: tuple[str, ...] = (
    "alexnet",
    "convnext_base",
    "convnext_large",
    "convnext_small",
    "convnext_tiny",
    "densenet121",
    "densenet161",
    "densenet169",
    "densenet201",
    "efficientnet_b0",
    "efficientnet_b1",
    "efficientnet_b2",
    "efficientnet_b3",
    "efficientnet_b4",
    "efficientnet_b5",
    "efficientnet_b6",
    "efficientnet_b7",
    "efficientnet_v2_l",
    "efficientnet_v2_m",
    "efficientnet_v2_s",
    "googlenet",
    "inception_v3",
    "maxvit_t",
    "mnasnet0_5",
    "mnasnet0_75",
    "mnasnet1_0",
    "mnasnet1_3",
    "mobilenet_v2",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
    "regnet_x_16gf",
    "regnet_x_1_6gf",
    "regnet_x_32gf",
    "regnet_x_3_2gf",
    "regnet_x_400mf",
    "regnet_x_800mf",
    "regnet_x_8gf",
    "regnet_y_128gf",
    "regnet_y_16gf",
    "regnet_y_1_6gf",
    "regnet_y_32gf",
    "regnet_y_3_2gf",
    "regnet_y_400mf",
    "regnet_y_800mf",
    "regnet_y_8gf",
    "resnet101",
    "resnet152",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnext101_32x8d",
    "resnext101_64x4d",
    "resnext50_32x4d",
    "shufflenet_v2_x0_5",
    "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5",
    "shufflenet_v2_x2_0",
    "squeezenet1_0",
    "squeezenet1_1",
    "swin_b",
    "swin_s",
    "swin_t",
    "swin_v2_b",
    "swin_v2_s",
    "swin_v2_t",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
    "vit_b_16",
    "vit_b_32",
    "vit_h_14",
    "vit_l_16",
    "vit_l_32",
    "wide_resnet101_2",
    "wide_resnet50_2",
)

# name -> (transformers model family, config overrides). Defaults of each family's Config class are the
# base-size model (bert-base-uncased, gpt2 124M, xlm-mlm-en-2048).
HF_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "bert-base": ("bert", {}),
    "bert-large": (
        "bert",
        {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096},
    ),
    "bert-small": (
        "bert",
        {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 2048},
    ),
    "bert-tiny": (
        "bert",
        {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512},
    ),
    "gpt2": ("gpt2", {}),
    "gpt2-medium": ("gpt2", {"n_embd": 1024, "n_layer": 24, "n_head": 16}),
    "gpt2-small": ("gpt2", {"n_embd": 384, "n_layer": 6, "n_head": 6}),
    "gpt2-tiny": ("gpt2", {"n_embd": 128, "n_layer": 2, "n_head": 2}),
    "xlm": ("xlm", {}),
    # Llama-3.2-1B and Llama-3.1-8B (meta-llama/*/config.json on the Hugging Face hub): decoder-only, grouped-query
    # attention, SwiGLU MLP, vocabulary 128,256. Built from the config alone, with random weights.
    "llama-1b": (
        "llama",
        {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "tie_word_embeddings": True,
        },
    ),
    "llama-8b": (
        "llama",
        {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "tie_word_embeddings": False,
        },
    ),
    "llama-tiny": (
        "llama",
        {
            "hidden_size": 64,
            "intermediate_size": 176,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": 512,
            "max_position_embeddings": 2048,
        },
    ),
}

_FACTORY = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_]\w*\Z")

ModelKind = Literal["torchvision", "hf", "factory"]


@dataclass(frozen=True)
class ModelRef:
    """A parsed model name: its kind and the key within that kind."""

    name: str
    kind: ModelKind
    key: str


def parse_model_name(name: str) -> ModelRef:
    """Parse and check a model name (its spelling; an ``hf:`` model's configuration is looked up when the model
    is built, :func:`srifty.compute.hf_configs.require_hf_config`).

    Raises:
        ProfileError: the name is not a known torchvision model, not ``hf:`` and a Hub id or path, and not of
            the form ``package.module:function``; the message lists the closest known names.
    """
    from srifty.compute.hf_configs import HUB_ID, bundled_hf_ids

    text = name.strip()
    known_hf = ["hf:" + k for k in (*HF_MODELS, *bundled_hf_ids())]
    if text.startswith("hf:"):
        key = text[3:].strip()
        if key in HF_MODELS or HUB_ID.match(key) or key.endswith(".json") or key.startswith((".", "/", "~")):
            return ModelRef(text, "hf", key)
        raise ProfileError(
            f"'{text}' is not a Hugging Face model id (org/name), a config.json path or one of srifty's names."
            f"{did_you_mean(text, known_hf)}"
        )
    if ":" in text:
        if not _FACTORY.match(text):
            raise ProfileError(f"model '{text}' looks like a factory but is not of the form package.module:function.")
        return ModelRef(text, "factory", text)
    if text in TORCHVISION_MODELS:
        return ModelRef(text, "torchvision", text)
    raise ProfileError(
        f"unknown model '{text}'.{did_you_mean(text, TORCHVISION_MODELS + tuple(known_hf))} Use a torchvision "
        "model name (resnet50), hf:<Hugging Face model id or config.json> (hf:bert-base-uncased) or "
        "package.module:function."
    )
