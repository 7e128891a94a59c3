"""The judge's own analytical counts of the bundled models: parameters, FLOPs, bytes and ops from their shapes
(EMULATED cloud; no torch, no profile).

Each model is written down layer by layer as its published definition has it (torchvision's ``resnet18``,
``resnet50``, ``vgg16``, ``alexnet``, ``inception_v3`` (no auxiliary logits), ``mobilenet_v2``,
``shufflenet_v2_x1_0``; Hugging Face's ``BertForMaskedLM``, ``GPT2LMHeadModel`` and ``XLMWithLMHeadModel``
with the configurations srifty names ``hf:bert-base``, ``hf:bert-small``, ``hf:gpt2-small``, ``hf:xlm``, at
128 tokens; srifty's zoo DLRM), and counted per training sample:

* **FLOPs** of convolutions (``2 · C_in/groups · k_h · k_w · C_out · H_out · W_out``) and of matrix products
  (``2 · in · out`` per token of a linear layer, ``2 · L² · d`` for each of attention's two products); a
  backward pass costs twice its forward (a data gradient and a weight gradient of the same size);
* **bytes**: every op reads its input activations and writes its output (fp32), weights left out (they do not
  grow with the batch); a backward pass moves twice its forward's bytes;
* **ops**: one kernel-launching op per layer, activation, pooling, sum or concatenation (the calibration turns
  ops into kernels per phase);
* **parameters** in definition order with their bytes, and the order backward makes their gradients ready
  (reverse definition order) with the share of backward's work done by then (FLOPs at a reference GPU's
  FP32 rate plus bytes at its memory bandwidth: :data:`REFERENCE_FLOPS_PER_S`, :data:`REFERENCE_BYTES_PER_S`).

The parameter counts are checked against the H200's records and the published models in the tests. Only the
structure of a model is written here; nothing is measured or taken from srifty's profiles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: fp32 bytes per element.
ELEMENT_BYTES = 4
#: Rates that weigh FLOPs against bytes when the share of backward done by a parameter's gradient is counted
#: (an H200's sustained FP32 matrix rate and memory bandwidth, round figures; only their ratio matters).
REFERENCE_FLOPS_PER_S = 50e12
REFERENCE_BYTES_PER_S = 4e12


@dataclass
class _Op:
    conv_flops: float = 0.0
    matmul_flops: float = 0.0
    bytes: float = 0.0
    params: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Counter:
    """Accumulates a model's ops in forward order (per sample)."""

    ops: list[_Op] = field(default_factory=list)

    def add(self, *, conv: float = 0.0, matmul: float = 0.0, moved: float = 0.0, params: Any = ()) -> None:
        self.ops.append(_Op(conv, matmul, moved * ELEMENT_BYTES, list(params)))


# ------------------------------------------------------------------------------------------- CNN pieces
Shape = tuple[int, int, int]  # channels, height, width


def _out(size: int, k: int, s: int, p: int) -> int:
    return (size + 2 * p - k) // s + 1


def conv(
    c: Counter,
    name: str,
    x: Shape,
    out: int,
    k: int | tuple[int, int],
    s: int = 1,
    p: int | tuple[int, int] = 0,
    groups: int = 1,
    bias: bool = False,
) -> Shape:
    """A 2-D convolution."""
    kh, kw = (k, k) if isinstance(k, int) else k
    ph, pw = (p, p) if isinstance(p, int) else p
    h, w = _out(x[1], kh, s, ph), _out(x[2], kw, s, pw)
    weights = out * (x[0] // groups) * kh * kw
    params = [(f"{name}.weight", weights)] + ([(f"{name}.bias", out)] if bias else [])
    c.add(
        conv=2.0 * (x[0] // groups) * kh * kw * out * h * w,
        moved=x[0] * x[1] * x[2] + out * h * w,
        params=params,
    )
    return (out, h, w)


def bn(c: Counter, name: str, x: Shape) -> Shape:
    """Batch norm (two parameter vectors; two running buffers are not parameters)."""
    c.add(moved=2 * x[0] * x[1] * x[2], params=[(f"{name}.weight", x[0]), (f"{name}.bias", x[0])])
    return x


def act(c: Counter, x: Shape) -> Shape:
    """An element-wise activation (or dropout)."""
    c.add(moved=2 * x[0] * x[1] * x[2])
    return x


def pool(c: Counter, x: Shape, k: int, s: int, p: int = 0, ceil: bool = False) -> Shape:
    """Max or average pooling."""
    if ceil:
        h, w = -(-(x[1] + 2 * p - k) // s) + 1, -(-(x[2] + 2 * p - k) // s) + 1
    else:
        h, w = _out(x[1], k, s, p), _out(x[2], k, s, p)
    c.add(moved=x[0] * x[1] * x[2] + x[0] * h * w)
    return (x[0], h, w)


def adaptive(c: Counter, x: Shape, size: int) -> Shape:
    """Adaptive pooling to ``size × size``."""
    c.add(moved=x[0] * x[1] * x[2] + x[0] * size * size)
    return (x[0], size, size)


def add(c: Counter, x: Shape) -> Shape:
    """A residual sum."""
    c.add(moved=3 * x[0] * x[1] * x[2])
    return x


def cat(c: Counter, parts: list[Shape]) -> Shape:
    """Concatenation along channels."""
    channels = sum(p[0] for p in parts)
    h, w = parts[0][1], parts[0][2]
    c.add(moved=2 * channels * h * w)
    return (channels, h, w)


def linear(c: Counter, name: str, n_in: int, n_out: int, tokens: int = 1, bias: bool = True) -> None:
    """A fully connected layer applied to ``tokens`` vectors."""
    params = [(f"{name}.weight", n_in * n_out)] + ([(f"{name}.bias", n_out)] if bias else [])
    c.add(matmul=2.0 * n_in * n_out * tokens, moved=tokens * (n_in + n_out), params=params)


def cbr(c: Counter, name: str, x: Shape, out: int, k: Any, s: int = 1, p: Any = 0) -> Shape:
    """Convolution, batch norm, ReLU (torchvision's ``BasicConv2d`` and friends)."""
    x = conv(c, f"{name}.conv", x, out, k, s, p)
    x = bn(c, f"{name}.bn", x)
    return act(c, x)


# ------------------------------------------------------------------------------------------- the CNNs
def _resnet(c: Counter, blocks: list[int], bottleneck: bool) -> None:
    x = conv(c, "conv1", (3, 224, 224), 64, 7, 2, 3)
    x = act(c, bn(c, "bn1", x))
    x = pool(c, x, 3, 2, 1)
    inplanes = 64
    expansion = 4 if bottleneck else 1
    for layer, (n, planes) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True), start=1):
        for b in range(n):
            stride = 2 if b == 0 and layer > 1 else 1
            name = f"layer{layer}.{b}"
            inp = x
            if bottleneck:
                y = act(c, bn(c, f"{name}.bn1", conv(c, f"{name}.conv1", x, planes, 1)))
                y = act(c, bn(c, f"{name}.bn2", conv(c, f"{name}.conv2", y, planes, 3, stride, 1)))
                y = bn(c, f"{name}.bn3", conv(c, f"{name}.conv3", y, planes * 4, 1))
            else:
                y = act(c, bn(c, f"{name}.bn1", conv(c, f"{name}.conv1", x, planes, 3, stride, 1)))
                y = bn(c, f"{name}.bn2", conv(c, f"{name}.conv2", y, planes, 3, 1, 1))
            if stride != 1 or inplanes != planes * expansion:
                bn(c, f"{name}.downsample.1", conv(c, f"{name}.downsample.0", inp, planes * expansion, 1, stride))
            x = act(c, add(c, y))
            inplanes = planes * expansion
    x = adaptive(c, x, 1)
    linear(c, "fc", x[0], 1000)


def resnet18(c: Counter) -> None:
    _resnet(c, [2, 2, 2, 2], bottleneck=False)


def resnet50(c: Counter) -> None:
    _resnet(c, [3, 4, 6, 3], bottleneck=True)


def vgg16(c: Counter) -> None:
    x: Shape = (3, 224, 224)
    index = 0
    for v in (64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0):  # 0: max pool
        if v == 0:
            x = pool(c, x, 2, 2)
            index += 1
        else:
            x = act(c, conv(c, f"features.{index}", x, v, 3, 1, 1, bias=True))
            index += 2
    x = adaptive(c, x, 7)
    linear(c, "classifier.0", 512 * 7 * 7, 4096)
    act(c, (4096, 1, 1))
    act(c, (4096, 1, 1))
    linear(c, "classifier.3", 4096, 4096)
    act(c, (4096, 1, 1))
    act(c, (4096, 1, 1))
    linear(c, "classifier.6", 4096, 1000)


def alexnet(c: Counter) -> None:
    x = act(c, conv(c, "features.0", (3, 224, 224), 64, 11, 4, 2, bias=True))
    x = pool(c, x, 3, 2)
    x = act(c, conv(c, "features.3", x, 192, 5, 1, 2, bias=True))
    x = pool(c, x, 3, 2)
    x = act(c, conv(c, "features.6", x, 384, 3, 1, 1, bias=True))
    x = act(c, conv(c, "features.8", x, 256, 3, 1, 1, bias=True))
    x = act(c, conv(c, "features.10", x, 256, 3, 1, 1, bias=True))
    x = pool(c, x, 3, 2)
    x = adaptive(c, x, 6)
    act(c, (256 * 36, 1, 1))
    linear(c, "classifier.1", 256 * 36, 4096)
    act(c, (4096, 1, 1))
    act(c, (4096, 1, 1))
    linear(c, "classifier.4", 4096, 4096)
    act(c, (4096, 1, 1))
    linear(c, "classifier.6", 4096, 1000)


def mobilenet_v2(c: Counter) -> None:
    def cbr6(name: str, x: Shape, out: int, k: int, s: int = 1, groups: int = 1) -> Shape:
        x = conv(c, f"{name}.0", x, out, k, s, (k - 1) // 2, groups)
        return act(c, bn(c, f"{name}.1", x))

    x = cbr6("features.0", (3, 224, 224), 32, 3, 2)
    index = 1
    channels = 32
    for t, out, n, s in (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ):
        for i in range(n):
            stride = s if i == 0 else 1
            name = f"features.{index}.conv"
            hidden = channels * t
            y = x
            j = 0
            if t != 1:
                y = cbr6(f"{name}.{j}", y, hidden, 1)
                j += 1
            y = cbr6(f"{name}.{j}", y, hidden, 3, stride, hidden)
            y = conv(c, f"{name}.{j + 1}", y, out, 1)
            y = bn(c, f"{name}.{j + 2}", y)
            if stride == 1 and channels == out:
                y = add(c, y)
            x, channels = y, out
            index += 1
    x = cbr6(f"features.{index}", x, 1280, 1)
    x = adaptive(c, x, 1)
    act(c, (1280, 1, 1))
    linear(c, "classifier.1", 1280, 1000)


def shufflenet_v2_x1_0(c: Counter) -> None:
    x = act(c, bn(c, "conv1.1", conv(c, "conv1.0", (3, 224, 224), 24, 3, 2, 1)))
    x = pool(c, x, 3, 2, 1)
    channels = 24
    for stage, (repeats, out) in enumerate(zip((4, 8, 4), (116, 232, 464), strict=True), start=2):
        branch = out // 2
        for i in range(repeats):
            name = f"stage{stage}.{i}"
            if i == 0:
                a = bn(c, f"{name}.branch1.1", conv(c, f"{name}.branch1.0", x, channels, 3, 2, 1, groups=channels))
                a = act(c, bn(c, f"{name}.branch1.3", conv(c, f"{name}.branch1.2", a, branch, 1)))
                src = x
            else:
                src = (branch, x[1], x[2])
                c.add(moved=x[0] * x[1] * x[2])  # chunk
            b = act(c, bn(c, f"{name}.branch2.1", conv(c, f"{name}.branch2.0", src, branch, 1)))
            b = bn(
                c, f"{name}.branch2.4", conv(c, f"{name}.branch2.3", b, branch, 3, 2 if i == 0 else 1, 1, groups=branch)
            )
            b = act(c, bn(c, f"{name}.branch2.6", conv(c, f"{name}.branch2.5", b, branch, 1)))
            x = cat(c, [b, b])
            c.add(moved=2 * x[0] * x[1] * x[2])  # channel shuffle
            channels = out
    x = act(c, bn(c, "conv5.1", conv(c, "conv5.0", x, 1024, 1)))
    x = adaptive(c, x, 1)
    linear(c, "fc", 1024, 1000)


def inception_v3(c: Counter) -> None:
    x = cbr(c, "Conv2d_1a_3x3", (3, 299, 299), 32, 3, 2)
    x = cbr(c, "Conv2d_2a_3x3", x, 32, 3)
    x = cbr(c, "Conv2d_2b_3x3", x, 64, 3, 1, 1)
    x = pool(c, x, 3, 2)
    x = cbr(c, "Conv2d_3b_1x1", x, 80, 1)
    x = cbr(c, "Conv2d_4a_3x3", x, 192, 3)
    x = pool(c, x, 3, 2)

    def block_a(name: str, x: Shape, pool_features: int) -> Shape:
        b1 = cbr(c, f"{name}.branch1x1", x, 64, 1)
        b5 = cbr(c, f"{name}.branch5x5_2", cbr(c, f"{name}.branch5x5_1", x, 48, 1), 64, 5, 1, 2)
        b3 = cbr(c, f"{name}.branch3x3dbl_1", x, 64, 1)
        b3 = cbr(c, f"{name}.branch3x3dbl_3", cbr(c, f"{name}.branch3x3dbl_2", b3, 96, 3, 1, 1), 96, 3, 1, 1)
        bp = cbr(c, f"{name}.branch_pool", pool(c, x, 3, 1, 1), pool_features, 1)
        return cat(c, [b1, b5, b3, bp])

    def block_b(name: str, x: Shape) -> Shape:
        b3 = cbr(c, f"{name}.branch3x3", x, 384, 3, 2)
        bd = cbr(c, f"{name}.branch3x3dbl_1", x, 64, 1)
        bd = cbr(c, f"{name}.branch3x3dbl_3", cbr(c, f"{name}.branch3x3dbl_2", bd, 96, 3, 1, 1), 96, 3, 2)
        return cat(c, [b3, bd, pool(c, x, 3, 2)])

    def block_c(name: str, x: Shape, c7: int) -> Shape:
        b1 = cbr(c, f"{name}.branch1x1", x, 192, 1)
        b7 = cbr(c, f"{name}.branch7x7_1", x, c7, 1)
        b7 = cbr(c, f"{name}.branch7x7_2", b7, c7, (1, 7), 1, (0, 3))
        b7 = cbr(c, f"{name}.branch7x7_3", b7, 192, (7, 1), 1, (3, 0))
        bd = cbr(c, f"{name}.branch7x7dbl_1", x, c7, 1)
        bd = cbr(c, f"{name}.branch7x7dbl_2", bd, c7, (7, 1), 1, (3, 0))
        bd = cbr(c, f"{name}.branch7x7dbl_3", bd, c7, (1, 7), 1, (0, 3))
        bd = cbr(c, f"{name}.branch7x7dbl_4", bd, c7, (7, 1), 1, (3, 0))
        bd = cbr(c, f"{name}.branch7x7dbl_5", bd, 192, (1, 7), 1, (0, 3))
        bp = cbr(c, f"{name}.branch_pool", pool(c, x, 3, 1, 1), 192, 1)
        return cat(c, [b1, b7, bd, bp])

    def block_d(name: str, x: Shape) -> Shape:
        b3 = cbr(c, f"{name}.branch3x3_2", cbr(c, f"{name}.branch3x3_1", x, 192, 1), 320, 3, 2)
        b7 = cbr(c, f"{name}.branch7x7x3_1", x, 192, 1)
        b7 = cbr(c, f"{name}.branch7x7x3_2", b7, 192, (1, 7), 1, (0, 3))
        b7 = cbr(c, f"{name}.branch7x7x3_3", b7, 192, (7, 1), 1, (3, 0))
        b7 = cbr(c, f"{name}.branch7x7x3_4", b7, 192, 3, 2)
        return cat(c, [b3, b7, pool(c, x, 3, 2)])

    def block_e(name: str, x: Shape) -> Shape:
        b1 = cbr(c, f"{name}.branch1x1", x, 320, 1)
        b3 = cbr(c, f"{name}.branch3x3_1", x, 384, 1)
        b3 = cat(
            c,
            [
                cbr(c, f"{name}.branch3x3_2a", b3, 384, (1, 3), 1, (0, 1)),
                cbr(c, f"{name}.branch3x3_2b", b3, 384, (3, 1), 1, (1, 0)),
            ],
        )
        bd = cbr(c, f"{name}.branch3x3dbl_2", cbr(c, f"{name}.branch3x3dbl_1", x, 448, 1), 384, 3, 1, 1)
        bd = cat(
            c,
            [
                cbr(c, f"{name}.branch3x3dbl_3a", bd, 384, (1, 3), 1, (0, 1)),
                cbr(c, f"{name}.branch3x3dbl_3b", bd, 384, (3, 1), 1, (1, 0)),
            ],
        )
        bp = cbr(c, f"{name}.branch_pool", pool(c, x, 3, 1, 1), 192, 1)
        return cat(c, [b1, b3, bd, bp])

    x = block_a("Mixed_5b", x, 32)
    x = block_a("Mixed_5c", x, 64)
    x = block_a("Mixed_5d", x, 64)
    x = block_b("Mixed_6a", x)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x = block_c(name, x, c7)
    x = block_d("Mixed_7a", x)
    x = block_e("Mixed_7b", x)
    x = block_e("Mixed_7c", x)
    x = adaptive(c, x, 1)
    act(c, (2048, 1, 1))
    linear(c, "fc", 2048, 1000)


# ------------------------------------------------------------------------------------- transformers, DLRM
@dataclass(frozen=True)
class TransformerShape:
    """What a transformer's counts need (Hugging Face configuration names in the docstrings of the builders)."""

    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    tokens: int = 128
    token_types: int = 0
    pre_norm: bool = False
    tied_head: bool = True
    head_transform: bool = False
    conv1d_names: bool = False


def _norm(c: Counter, name: str, width: int, tokens: int) -> None:
    c.add(moved=2 * width * tokens, params=[(f"{name}.weight", width), (f"{name}.bias", width)])


def _transformer(c: Counter, t: TransformerShape, prefix: str, names: dict[str, Any]) -> None:
    """Embeddings, ``layers`` blocks, final norm and an LM head (tied to the word embeddings or not)."""
    L, d = t.tokens, t.hidden  # noqa: N806 (the papers' L for sequence length)
    embeddings = [(names["word"], t.vocab * d), (names["position"], t.positions * d)]
    if t.token_types:
        embeddings.append((names["token_type"], t.token_types * d))
    c.add(moved=len(embeddings) * L * d, params=embeddings)
    if names.get("embed_norm"):
        _norm(c, names["embed_norm"], d, L)
    c.add(moved=2 * L * d)  # dropout (every configuration here trains with dropout 0.1)
    for i in range(t.layers):
        block = f"{prefix}.{i}" if "{i}" not in names["block"] else names["block"].format(i=i)
        if t.pre_norm:
            _norm(c, f"{block}.{names['norm1']}", d, L)
        if t.conv1d_names:
            linear(c, f"{block}.attn.c_attn", d, 3 * d, L)
        else:
            for proj in names["qkv"]:
                linear(c, f"{block}.{proj}", d, d, L)
        c.add(matmul=2.0 * L * L * d, moved=2 * L * d + t.heads * L * L)  # scores
        c.add(moved=2 * t.heads * L * L)  # softmax
        c.add(moved=2 * t.heads * L * L)  # dropout on the attention weights
        c.add(matmul=2.0 * L * L * d, moved=t.heads * L * L + 2 * L * d)  # weighted values
        linear(c, f"{block}.{names['out']}", d, d, L)
        c.add(moved=2 * L * d)  # dropout
        c.add(moved=3 * L * d)  # residual
        _norm(c, f"{block}.{names['norm2' if t.pre_norm else 'norm1']}", d, L)
        linear(c, f"{block}.{names['ffn_in']}", d, t.ffn, L)
        c.add(moved=2 * L * t.ffn)  # activation
        linear(c, f"{block}.{names['ffn_out']}", t.ffn, d, L)
        c.add(moved=2 * L * d)  # dropout
        c.add(moved=3 * L * d)  # residual
        if not t.pre_norm:
            _norm(c, f"{block}.{names['norm2']}", d, L)
    if names.get("final_norm"):
        _norm(c, names["final_norm"], d, L)
    if t.head_transform:
        linear(c, "cls.predictions.transform.dense", d, d, L)
        c.add(moved=2 * L * d)
        _norm(c, "cls.predictions.transform.LayerNorm", d, L)
    head_params = [] if t.tied_head else [(names["head"] + ".weight", t.vocab * d)]
    if names.get("head_bias"):
        head_params.append((names["head_bias"], t.vocab))
    c.add(matmul=2.0 * L * d * t.vocab, moved=L * (d + t.vocab), params=head_params)
    c.add(moved=3 * L * t.vocab)  # cross-entropy


def _bert(c: Counter, layers: int, hidden: int, heads: int, ffn: int) -> None:
    shape = TransformerShape(layers, hidden, heads, ffn, vocab=30522, positions=512, token_types=2, head_transform=True)
    names = {
        "word": "bert.embeddings.word_embeddings.weight",
        "position": "bert.embeddings.position_embeddings.weight",
        "token_type": "bert.embeddings.token_type_embeddings.weight",
        "embed_norm": "bert.embeddings.LayerNorm",
        "block": "bert.encoder.layer.{i}",
        "qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
        "out": "attention.output.dense",
        "norm1": "attention.output.LayerNorm",
        "ffn_in": "intermediate.dense",
        "ffn_out": "output.dense",
        "norm2": "output.LayerNorm",
        "head_bias": "cls.predictions.bias",
    }
    _transformer(c, shape, "bert.encoder.layer", names)


def hf_bert_base(c: Counter) -> None:
    """``BertForMaskedLM`` with ``BertConfig()`` (bert-base-uncased)."""
    _bert(c, 12, 768, 12, 3072)


def hf_bert_small(c: Counter) -> None:
    """``BertForMaskedLM``, 4 layers of 512 (8 heads, 2048 wide feed-forward)."""
    _bert(c, 4, 512, 8, 2048)


def hf_gpt2_small(c: Counter) -> None:
    """``GPT2LMHeadModel``, 6 layers of 384 (6 heads), GPT-2's vocabulary and 1024 positions, tied head."""
    shape = TransformerShape(6, 384, 6, 4 * 384, vocab=50257, positions=1024, pre_norm=True, conv1d_names=True)
    names = {
        "word": "transformer.wte.weight",
        "position": "transformer.wpe.weight",
        "block": "transformer.h.{i}",
        "out": "attn.c_proj",
        "norm1": "ln_1",
        "norm2": "ln_2",
        "ffn_in": "mlp.c_fc",
        "ffn_out": "mlp.c_proj",
        "final_norm": "transformer.ln_f",
    }
    _transformer(c, shape, "transformer.h", names)


def hf_xlm(c: Counter) -> None:
    """``XLMWithLMHeadModel`` with ``XLMConfig()`` (xlm-mlm-en-2048: 12 layers of 2048, 16 heads, 30145 tokens,
    tied head with its own bias)."""
    shape = TransformerShape(12, 2048, 16, 4 * 2048, vocab=30145, positions=512)
    names = {
        "word": "transformer.embeddings.weight",
        "position": "transformer.position_embeddings.weight",
        "embed_norm": "transformer.layer_norm_emb",
        "block": "transformer.layer{i}",
        "qkv": ("q_lin", "k_lin", "v_lin"),
        "out": "out_lin",
        "norm1": "layer_norm1",
        "ffn_in": "lin1",
        "ffn_out": "lin2",
        "norm2": "layer_norm2",
        "head_bias": "pred_layer.proj.bias",
    }
    _transformer(c, shape, "transformer", names)


def dlrm(c: Counter) -> None:
    """srifty's zoo DLRM: 13 dense features through 512-256-64, 8 embedding bags of 100,000 × 64, pairwise dot
    products of the 9 vectors, top 512-256-1."""
    widths = [13, 512, 256, 64]
    for i in range(3):
        linear(c, f"bottom.{2 * i}", widths[i], widths[i + 1])
        c.add(moved=2 * widths[i + 1])
    for t in range(8):
        c.add(moved=2 * 64, params=[(f"tables.{t}.weight", 100_000 * 64)])
    c.add(matmul=2.0 * 9 * 9 * 64, moved=2 * 9 * 64 + 81)
    width = 64 + 36
    for i, out in enumerate((512, 256, 1)):
        linear(c, f"top.{2 * i}", width, out)
        c.add(moved=2 * out)
        width = out


#: srifty's model name → its builder and input.
ARCHITECTURES: dict[str, tuple[Callable[[Counter], None], str, str]] = {
    "alexnet": (alexnet, "torchvision", "3x224x224 image"),
    "inception_v3": (inception_v3, "torchvision", "3x299x299 image"),
    "mobilenet_v2": (mobilenet_v2, "torchvision", "3x224x224 image"),
    "resnet18": (resnet18, "torchvision", "3x224x224 image"),
    "resnet50": (resnet50, "torchvision", "3x224x224 image"),
    "shufflenet_v2_x1_0": (shufflenet_v2_x1_0, "torchvision", "3x224x224 image"),
    "vgg16": (vgg16, "torchvision", "3x224x224 image"),
    "hf:bert-base": (hf_bert_base, "hf", "128 tokens"),
    "hf:bert-small": (hf_bert_small, "hf", "128 tokens"),
    "hf:gpt2-small": (hf_gpt2_small, "hf", "128 tokens"),
    "hf:xlm": (hf_xlm, "hf", "128 tokens"),
    "srifty.compute.zoo:dlrm": (dlrm, "factory", "13 dense features, 8 sparse ids"),
}
#: The H200 record's names of srifty's models, where they differ.
H200_NAMES = {"hf:bert-base": "bert_base_seq128"}


def count(model: str) -> Counter:
    """The counted ops of ``model`` (a key of :data:`ARCHITECTURES`)."""
    builder = ARCHITECTURES[model][0]
    counter = Counter()
    builder(counter)
    return counter


def workload(model: str) -> dict[str, Any]:
    """The workload record of ``model`` (the form :mod:`srifty.cloud.transfer` reads; see the module docstring)."""
    counter = count(model)
    _, kind, input_desc = ARCHITECTURES[model]
    fw_conv = sum(op.conv_flops for op in counter.ops)
    fw_mm = sum(op.matmul_flops for op in counter.ops)
    fw_bytes = sum(op.bytes for op in counter.ops)
    params = [(name, n) for op in counter.ops for name, n in op.params]
    n_params = sum(n for _, n in params)
    # Backward meets the ops in reverse; a parameter's gradient is ready once its op's backward is done.
    cost = [
        2.0 * ((op.conv_flops + op.matmul_flops) / REFERENCE_FLOPS_PER_S + op.bytes / REFERENCE_BYTES_PER_S)
        for op in counter.ops
    ]
    total = sum(cost) or 1.0
    ready: list[dict[str, Any]] = []
    done = 0.0
    for op, spent in zip(reversed(counter.ops), reversed(cost), strict=True):
        done += spent
        for name, n in reversed(op.params):
            ready.append({"name": name, "bytes": n * ELEMENT_BYTES, "ready_frac": round(done / total, 6)})
    n_ops = sum(1 for _ in counter.ops)
    return {
        "model": model,
        "kind": kind,
        "input": input_desc,
        "h200_name": H200_NAMES.get(model, model),
        "n_params": n_params,
        "param_bytes": n_params * ELEMENT_BYTES,
        "params_ready_order": ready,
        "phases": {
            "fw": {"conv_flops": fw_conv, "matmul_flops": fw_mm, "bytes": fw_bytes, "ops": n_ops},
            "bw": {"conv_flops": 2 * fw_conv, "matmul_flops": 2 * fw_mm, "bytes": 2 * fw_bytes, "ops": n_ops},
        },
        "source": "the judge's analytical counts from the model's published definition (srifty.cloud.architectures)",
    }
