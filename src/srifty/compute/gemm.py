"""How well a GPU's cores can be kept busy by one matrix product, from its shape alone.

A GPU runs a matrix product (a convolution as its implicit GEMM) as output tiles, one thread block per
tile, on ``S`` streaming multiprocessors (SMs) at once. Three things in the shape, none of which FLOPs or
bytes can say, keep it below the unit's peak (NeuSight, ASPLOS'25, predicts per tile for this reason):

* **padding**: a ``m × n`` output cut into ``tm × tn`` tiles computes ``⌈m/tm⌉·tm × ⌈n/tn⌉·tn`` (a
  64-channel layer on 128-wide tiles wastes half);
* **wave quantisation**: ``T`` tiles run in ``⌈T/S⌉`` waves, the last one partly idle, and a product with
  fewer tiles than SMs leaves SMs idle;
* **the tile's fixed cost**: each block loads its first operands and writes its output whatever its ``k``;
  over a tile's ``k`` steps this costs ``k / (k + k½)`` of the peak, ``k½`` fitted (``tile.k_half``).

:func:`tile_occupancy` computes the first two per candidate tile shape (:data:`TILES`); the GPU model
(:mod:`srifty.compute.gpu_model`) takes the best tile for each product, as a library's heuristic would,
with the third and a fitted penalty for smaller tiles (which reuse each loaded operand less). Assumed:
one block per SM at a time (large tiles fill an SM's registers and shared memory); where a GPU's SM count
is unknown, no wave quantisation. Split-K (a library may split a product with few tiles, such as a weight
gradient, ``m = C_out``, ``n = C_in·kernel``, ``k = N·H·W``, along ``k`` over several blocks):
``split_k_min``. The GPU model splits products on the SIMT cores (down to 4,096 ``k`` steps per block) and
prices them by occupancy alone (their slower math hides a tile's fixed cost), and never splits products on
tensor cores. Chosen by leave-one-model-out figures (issue 27; BENCHMARKS.md, "Cross-GPU estimation"),
iteration MAPE on the H200 curves with the H200 curves only in the fit: tensor-core split-K down to 256,
4,096 or 65,536 ``k`` steps per block 24.8%, 23.1%, 22.9%, none 20.5%; one 128×128 tile instead of the
best of four 45.6%, five tiles (adding 64×32) 23.0%. Then, with the public rows in the fit, SIMT products by
occupancy alone with split-K at 4,096 against as tensor cores without it: H200 20.0% against 20.7%, public
rows 20.3% against 21.3% (held-out ResNet-50's FP32 rows on the V100, SIMT, had come out 86-97% slow).
Last, the operand traffic a product adds beyond its tensors' bytes (``F / I`` in the GPU model) scaled by
its best tile's :func:`tile_edge` over a 128×128 tile's: H200 only 20.8% → 18.3% (vgg16 44.7% → 32.6%);
with the public rows, H200 20.0% → 17.3%, public rows 18.6% → 19.1%. Tried after that and not adopted (H200
curves only in the fit, against 18.3%): tensor-core split-K that also balances waves when tiles outnumber
SMs (the split count up to 16 that fills the last wave best, stream-K-like), down to 65,536 or 16,384 ``k``
steps per block, 19.6% and 20.5%; the same at 65,536 with a backward bandwidth of its own for normalisation,
21.0%; one fitted slowdown of every backward convolution, 18.3%; memory efficiencies of their own for backward
normalisations and element-wise ops (``mu.norm``, ``mu.elementwise`` split by phase), 18.6%; an additive
layout-transform cost of TF32 convolutions (their tensors' bytes once more, at a fitted bandwidth fraction,
for cuDNN's NCHW↔NHWC copies), 18.6%, and with split-K at 65,536, 21.0%. Fitted on all eight curves,
split-K at 65,536 brings vgg16's backward/forward ratio at batch 256 from 3.08 to 2.2 (measured 2.16), but
inception_v3's and resnet18's fall to 1.97 and 1.93 (measured 2.38 and 2.16): the backward passes differ in
ways the op counts do not carry. The figures are therefore optimistic by the choice. Without split-K a
weight gradient on tensor cores has few tiles and leaves most SMs idle, so the fitted backward tile efficiencies are low
(0.02-0.3 on the H200 curves), lower than a profiler would show: the fit leans on them for what else makes
a backward pass slow, and this module does not claim to say which kernels cuDNN picks.

srifty's own H200 profiles (BENCHMARKS.md, "Profiles measured on a GPU (H200)", check 4) timed every op at batch
1024 and show the trade: the bundled fit prices convolutions too slow (forward 1.0-1.9x, backward 1.5-1.8x on
the plain CNNs and 4.7-5.9x on efficientnet_b0's and mobilenet_v2's), normalisation 3-6x too fast (``mu.norm``
0.82, where the ops run at about a quarter of the bandwidth their distinct bytes imply), and a 7x7 depthwise
backward (convnext_tiny) 14x too fast. Fitting those per-class kernel times as extra targets (``python -m
benchmarks.gpu_op_targets``: H200 data only, leave one model out over the released curves' 8 models and the 7
profiled models the fit never saw, against 18.3% / 12.8%): every class 20.6% / 20.3%; normalisation only 16.7% /
14.7% (vgg16 32.6% -> 17.4%, resnet50 24.2% -> 29.2%); normalisation and convolution 16.2% / 13.9% (at half
weight 17.2% / 13.9%); those and grouped convolutions without convnext_tiny 17.7% / 13.6% (worst model 29.0%).
Averaged over the 15 models alike, normalisation and convolution targets come to 15.1-15.8% and every class
16.5-20.5%, against 15.7% without: the targets move the error between models more than out of them, so none was
adopted. What limits is the products' pricing itself. Held-out resnet50 is over-predicted from batch 32 on with
or without the targets (+25-50% as fitted now; +35-58% with normalisation and convolution targets, which raise
``mu.conv`` only from 0.19 to 0.33): one memory efficiency per class cannot hold resnet50's 1x1 convolutions (k
= 64-256: their distinct bytes move at about 0.8 of the bandwidth, 2.9-3.4x faster than priced) and vgg16's
first layer (k = 27: twice slower than priced) at once; a memory efficiency by shape, fitted on per-op times, is
the next thing to try.

Session 15 tried that idea in its simplest form and a second kind of data (``python -m benchmarks.gpu_op_targets
--pricing three-bottlenecks [--public]``; figures leave one model out: released curves' iteration MAPE / worst
model / public rows / the 7 profiled models, with the public rows in the fit; as shipped then 17.3% / vgg16 34.3% /
19.1% / 12.8%). *Three bottlenecks*: a product's time the smooth maximum of its arithmetic, its distinct bytes at
``mu`` of the bandwidth (0.8 for a 1×1 convolution, per the profiles' op times) and its operand re-reads by tile
at an on-chip feed rate, instead of the arithmetic against the sum of the two byte terms: with the H200 curves
only in the fit 19.4% / 13.2% (released / profiled), with normalisation targets 16.0% / 14.7%, with
normalisation and convolution targets 15.3% / 13.5%; with the public rows, the last 16.6% / bert 29.4% / 21.1% /
14.1%, and normalisation targets only 16.2% / bert 32.1% / 20.2% / 14.4%; normalisation and convolution targets
with the shipped pricing 17.7% / 22.8% public / 14.1%. Each moves error from the released curves to the public
rows and the profiled models; none was adopted. *The profiled models' whole-phase curves as data* (each left out
with its model): 15.7% / vgg16 33.1% / 18.8% / 14.3%, over all 116 points of the 15 models 15.4% against 16.2%, and
held-out BERT-base 21.7% → 11.5% (three more transformers in the fit): adopted, as more data for the same
figures. With them, tensor-core split-K at 65,536 or 16,384 ``k`` steps (H200 data only) 17.9% and 19.2% against
15.9%, vgg16 33.4% and 42.0%: vgg16's backward is not a weight gradient's idle SMs alone; three bottlenecks
15.6% but public rows 33.0%.

Session 20 tried the two corrections together, since each per-op fact says the fit trades one class's error
for the other's (``python -m benchmarks.gpu_op_targets --tensor-split-k 65536``, H200 data only, released curves
/ the 7 profiled models as held out, against 18.3% / 12.8% as shipped and 16.7% / 14.7% for normalisation
targets without split-K): split-K alone 19.7% / 13.0% (vgg16 35.2%); with normalisation targets 17.7% / 13.9%
(vgg16 18.5%, resnet50 25.2%); with normalisation and convolution targets 18.1% / 13.4% at weight 1 and 17.7% /
13.5% at 0.5. Split-K adds nothing the targets did not already give, and none was adopted.

Pure numpy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

# Candidate output tiles (rows, columns): what cuBLAS/cuDNN tensor-core and SIMT kernels commonly use.
TILES: tuple[tuple[int, int], ...] = ((256, 128), (128, 128), (128, 64), (64, 64))


def tile_occupancy(
    dims: NDArray[np.float64], sm_count: int | None, split_k_min: float | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Padding × wave-quantisation efficiency of each product on each candidate tile, and its ``k`` per block.

    Args:
        dims: ``(gemms, 4, batches)``: ``m, n, k, problems`` of each product at each batch.
        sm_count: the GPU's SMs; ``None``: no wave quantisation (every wave full).
        split_k_min: with a value, a product with fewer tiles than SMs is split along ``k`` into as many
            blocks as fill the SMs, each at least this many ``k`` steps; ``None``: never split.

    Returns:
        ``(occupancy, k_per_block)``, each ``(tiles, gemms, batches)``: the fraction of the tiles' work
        slots that compute useful output, in ``(0, 1]``, and the ``k`` steps each block runs.
    """
    m, n, k, problems = dims[:, 0], dims[:, 1], dims[:, 2], dims[:, 3]
    occupancy = np.empty((len(TILES), *m.shape))
    k_per_block = np.empty_like(occupancy)
    for i, (tm, tn) in enumerate(TILES):
        rows, cols = np.ceil(m / tm), np.ceil(n / tn)
        occupancy[i] = (m * n) / (rows * tm * cols * tn)
        splits = np.ones_like(m)
        if sm_count is not None:
            tiles = rows * cols * problems
            if split_k_min is not None:
                splits = np.clip(np.minimum(np.floor(sm_count / tiles), np.floor(k / split_k_min)), 1.0, None)
            blocks = tiles * splits
            occupancy[i] *= blocks / (np.ceil(blocks / sm_count) * sm_count)
        k_per_block[i] = k / splits
    return occupancy, k_per_block


def tile_edge(tile: tuple[int, int]) -> float:
    """``64/tm + 64/tn``: how much less a tile reuses each operand than a 64-edge reference does per output
    (0.5 for 256×128, 1 for 128×128, 2 for 64×64); the fitted penalty for small tiles scales with it."""
    tm, tn = tile
    return 64.0 / tm + 64.0 / tn


TILE_EDGES: NDArray[np.float64] = np.array([tile_edge(t) for t in TILES])
