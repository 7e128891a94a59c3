"""Small models that are not in torchvision or transformers, as ``package.module:function`` factories.

Each factory returns ``(model, make_batch, loss_fn)``: ``make_batch(batch_size)`` gives ``(inputs,
target)`` on the CPU, and ``loss_fn(model(inputs), target)`` is a scalar. Use them as
``srifty.compute.zoo:dlrm`` and so on. They need torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

Factory = tuple[nn.Module, Callable[[int], tuple[Any, Any]], Callable[[Any, Any], torch.Tensor]]


class DLRMStyle(nn.Module):
    """A DLRM-style recommender: bottom MLP on dense features, embedding bags for sparse ones, pairwise
    dot-product interaction, top MLP (Naumov et al. 2019). Embedding gradients are dense, so data-parallel
    training must all-reduce the whole tables: communication-heavy, as the paper's DLRM case study found.
    """

    def __init__(self, n_dense: int, table_rows: list[int], dim: int, top: list[int]) -> None:
        super().__init__()
        self.bottom = nn.Sequential(
            nn.Linear(n_dense, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, dim), nn.ReLU()
        )
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for rows in table_rows)
        n_vectors = len(table_rows) + 1
        n_inter = n_vectors * (n_vectors - 1) // 2
        layers: list[nn.Module] = []
        width = dim + n_inter
        for out in top:
            layers += [nn.Linear(width, out), nn.ReLU()]
            width = out
        layers.append(nn.Linear(width, 1))
        self.top = nn.Sequential(*layers)
        self._pairs = torch.triu_indices(n_vectors, n_vectors, offset=1)

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        x = self.bottom(dense)
        embedded = [table(sparse[:, i : i + 1]) for i, table in enumerate(self.tables)]
        vectors = torch.stack([x, *embedded], dim=1)
        inter = torch.bmm(vectors, vectors.transpose(1, 2))[:, self._pairs[0], self._pairs[1]]
        return self.top(torch.cat([x, inter], dim=1)).squeeze(1)


def dlrm(n_tables: int = 8, rows_per_table: int = 100_000, dim: int = 64) -> Factory:
    """DLRM-style model with ``n_tables`` tables of ``rows_per_table`` × ``dim`` (about 51M parameters)."""
    model = DLRMStyle(13, [rows_per_table] * n_tables, dim, [512, 256])

    def make_batch(batch_size: int) -> tuple[Any, Any]:
        dense = torch.randn(batch_size, 13)
        sparse = torch.randint(0, rows_per_table, (batch_size, n_tables))
        return (dense, sparse), torch.randint(0, 2, (batch_size,)).float()

    return model, make_batch, nn.BCEWithLogitsLoss()


def mlp(width: int = 4096, depth: int = 4, n_in: int = 1024, n_classes: int = 1000) -> Factory:
    """A wide MLP: few FLOPs per parameter, so communication-heavy under data parallelism."""
    layers: list[nn.Module] = []
    fan_in = n_in
    for _ in range(depth):
        layers += [nn.Linear(fan_in, width), nn.ReLU()]
        fan_in = width
    layers.append(nn.Linear(fan_in, n_classes))
    model = nn.Sequential(*layers)

    def make_batch(batch_size: int) -> tuple[Any, Any]:
        return torch.randn(batch_size, n_in), torch.randint(0, n_classes, (batch_size,))

    return model, make_batch, nn.CrossEntropyLoss()


def tiny_mlp() -> Factory:
    """A 3-layer MLP small enough for tests (about 20k parameters)."""
    return mlp(width=64, depth=2, n_in=32, n_classes=10)


def tiny_cnn() -> Factory:
    """A small CNN on 32×32 images, for tests that need convolutions and several DDP buckets."""
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(32 * 16, 256),
        nn.ReLU(),
        nn.Linear(256, 10),
    )

    def make_batch(batch_size: int) -> tuple[Any, Any]:
        return torch.randn(batch_size, 3, 32, 32), torch.randint(0, 10, (batch_size,))

    return model, make_batch, nn.CrossEntropyLoss()


def _bert_squad(config: Any, seq_len: int) -> Factory:
    """A BERT with a SQuAD span head on random ids (the shape of the public ``bert_*_squad`` benchmarks)."""
    import transformers

    model = transformers.BertForQuestionAnswering(config)

    def make_batch(batch_size: int) -> tuple[Any, Any]:
        ids = torch.randint(0, config.vocab_size, (batch_size, seq_len))
        inputs = {
            "input_ids": ids,
            "token_type_ids": torch.zeros_like(ids),
            "attention_mask": torch.ones_like(ids),
            "start_positions": torch.randint(0, seq_len, (batch_size,)),
            "end_positions": torch.randint(0, seq_len, (batch_size,)),
        }
        return inputs, None

    return model, make_batch, lambda output, _target: output.loss


def bert_base_squad(seq_len: int = 384) -> Factory:
    """BERT-base (bert-base-uncased shape) fine-tuning on SQuAD-shaped inputs, 384 tokens as in
    NVIDIA DeepLearningExamples' ``run_squad.sh`` (the workload of Lambda's ``bert_base_squad`` figures)."""
    import transformers

    return _bert_squad(transformers.BertConfig(), seq_len)


def bert_large_squad(seq_len: int = 384) -> Factory:
    """BERT-large (24 layers, hidden 1024, 16 heads) fine-tuning on SQuAD-shaped inputs, 384 tokens."""
    import transformers

    config = transformers.BertConfig(
        hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096
    )
    return _bert_squad(config, seq_len)


def resnext101_32x4d(num_classes: int = 1000) -> Factory:
    """ResNeXt-101 32x4d (grouped 3x3 convolutions, 32 groups of width 4) on 224x224 images, the model of
    NVIDIA DeepLearningExamples' ``resnext101-32x4d`` (torchvision has only 32x8d and 64x4d)."""
    from torchvision.models.resnet import Bottleneck, ResNet

    model = ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=4, num_classes=num_classes)

    def make_batch(batch_size: int) -> tuple[Any, Any]:
        return torch.randn(batch_size, 3, 224, 224), torch.randint(0, num_classes, (batch_size,))

    return model, make_batch, nn.CrossEntropyLoss()


class DecoderBlock(nn.Module):
    """A pre-norm transformer block: self-attention (causal, a decoder's; ``causal=False``: an encoder's), then a
    4× MLP, each with a residual."""

    def __init__(self, dim: int, heads: int, causal: bool = True) -> None:
        super().__init__()
        self.heads = heads
        self.causal = causal
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, seq, 3, self.heads, dim // self.heads).unbind(2)
        attn = nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=self.causal
        )
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, seq, dim))
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    """A decoder-only transformer (GPT-style): token and position embeddings, ``depth`` blocks in ``layers``
    (the units FSDP shards), a final norm and an untied head."""

    def __init__(self, vocab: int, dim: int, depth: int, heads: int, seq_len: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq_len, dim))
        self.layers = nn.ModuleList(DecoderBlock(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


def token_batch(batch_size: int, seq_len: int, vocab: int, generator: torch.Generator | None = None) -> Any:
    """A learnable synthetic language: each sequence counts up from a random start by a random stride (mod
    ``vocab``); the target is the next token. Returns ``(tokens, targets)``."""
    start = torch.randint(0, vocab, (batch_size, 1), generator=generator)
    stride = torch.randint(1, 4, (batch_size, 1), generator=generator)
    sequence = (start + stride * torch.arange(seq_len + 1)) % vocab
    return sequence[:, :-1].contiguous(), sequence[:, 1:].contiguous()


def decoder_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1))


def decoder(vocab: int = 2048, dim: int = 256, depth: int = 6, heads: int = 8, seq_len: int = 128) -> Factory:
    """A small decoder-only transformer on :func:`token_batch` data (about 5.8 M parameters by default)."""
    torch.manual_seed(0)
    model = Decoder(vocab, dim, depth, heads, seq_len)
    return model, lambda batch: token_batch(batch, seq_len, vocab), decoder_loss


def tiny_decoder() -> Factory:
    """A tiny decoder (vocab 256, width 64, 4 blocks, 32 tokens; about 0.23 M parameters) for tests."""
    return decoder(vocab=256, dim=64, depth=4, heads=4, seq_len=32)
