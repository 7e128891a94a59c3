"""PyTorch integration: make every sample count equally when DDP ranks have different local batches.

DDP averages gradients over ranks: ``g = (1/W)·Σ_r g_r``, where each rank's ``g_r`` is the gradient of its
mean loss over its own ``b_r`` samples. With unequal local batches that gives a sample on a small-batch
rank more weight than one on a large-batch rank. One big batch of ``B = Σ b_r`` would give
``g* = (1/B)·Σ_j ∇l_j = Σ_r (b_r/B)·g_r``. srifty (as the paper, section "Model Quality") reweights each
rank's gradient by ``w_r = b_r / B``.

**How: a DDP communication hook** (:func:`reweight`), which scales each gradient bucket by ``w_r`` and
sums across ranks instead of averaging. Chosen over scaling the loss because the training loop's loss
stays the ordinary per-rank mean (what users log and compare), nothing in the loop has to remember to
scale, and it composes with gradient accumulation under ``no_sync`` (the hook runs once per synchronised
step on the accumulated gradient). The loss-scaling equivalent is :func:`loss_scale` (``w_r · W``), for
code that cannot register a comm hook.

The weight comes from the ``SRIFTY_*`` environment variables that ``srifty plan --skypilot`` exports
(:func:`grad_weight_from_env`). Batch-norm statistics are still per rank; equivalence to one big batch
holds for models without batch-dependent layers in training mode.
"""

from srifty.torch.reweight import grad_weight_from_env, loss_scale, reweight, reweighting_hook

__all__ = ["grad_weight_from_env", "loss_scale", "reweight", "reweighting_hook"]
