"""A transformer for `srifty run`: a GPT-2-small-like language model (6 layers, 384 wide, 6 heads, GPT-2's
50,257-token vocabulary) at a short sequence, real DDP (gloo); the loop is ``train_resnet.py``'s.

    srifty run job.yaml --hosts hosts.txt --launcher netns --testbed tb --config 2xg4dn.8xlarge@8 \
        -- python examples/train_gpt2.py

It is ``srifty profile --model hf:gpt2-small`` (transformers' ``GPT2LMHeadModel`` built from a config, no
weights downloaded): profile it with ``srifty profile --model hf:gpt2-small --seq-len 32``. Data is
synthetic and deterministic per global step: random token sequences whose second half repeats the first
(learnable), the language-modelling loss on all of it.

Environment: ``TRAIN_GPT2_SEQ`` (tokens per sample, default 32), ``TRAIN_GPT2_THREADS`` (torch threads per
rank, default 1).
"""

import os

import torch
import transformers
from train_resnet import train

#: srifty's ``hf:gpt2-small`` (srifty.compute.names), GPT-2's vocabulary.
CONFIG = {"n_embd": 384, "n_layer": 6, "n_head": 6}


def model() -> torch.nn.Module:
    """The network trained here, as ``srifty profile --model hf:gpt2-small`` builds it."""
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(**CONFIG))


def batch(step: int, global_batch: int, seq: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The global batch of ``step``: token ids whose second half repeats the first; labels are the inputs."""
    gen = torch.Generator().manual_seed(1000 + step)
    half = torch.randint(0, vocab, (global_batch, (seq + 1) // 2), generator=gen)
    ids = torch.cat([half, half], dim=1)[:, :seq]
    return ids, ids


def main() -> None:
    seq = int(os.environ.get("TRAIN_GPT2_SEQ", "32"))
    torch.manual_seed(0)
    net = model()
    vocab = net.config.vocab_size
    train(
        net,
        lambda step, global_batch: batch(step, global_batch, seq, vocab),
        lambda ddp, x, y: ddp(input_ids=x, labels=y).loss,
        int(os.environ.get("TRAIN_GPT2_THREADS", "1")),
    )


if __name__ == "__main__":
    main()
