"""A saved XGBoost booster evaluated with numpy, so that predicting does not import XGBoost.

Importing ``xgboost`` takes about 1.8 s of CPU here (it imports scikit-learn and ``scipy.stats``), more than
everything else a ``srifty plan`` does. Training still uses XGBoost; a model that is only asked for
predictions (the embedded default, any model loaded from disk) reads its boosters' JSON with this module.

What it evaluates is the subset of XGBoost's JSON model format that srifty's boosters use, and it refuses
anything else (so a model it cannot evaluate exactly is loaded with XGBoost instead):

* ``gbtree`` with one target and one tree per round, an identity link (``reg:squarederror``,
  ``reg:pseudohubererror``, ``reg:absoluteerror``); the prediction is ``base_score`` plus the sum of one leaf
  per tree;
* numerical splits: ``x < split_condition`` goes left, in float32 as XGBoost compares; a missing value
  (NaN) follows ``default_left``;
* categorical splits (``split_type`` 1): a category listed in the node's ``categories`` goes right, any
  other goes left; a missing or negative category follows ``default_left``, as in XGBoost's ``Decision``.

``tests/test_network_trees.py`` checks it against XGBoost's own predictions on the embedded default.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

_IDENTITY_LINK = ("reg:squarederror", "reg:pseudohubererror", "reg:absoluteerror")


class UnsupportedBoosterError(ValueError):
    """The booster uses something :class:`JsonBooster` does not evaluate; load it with XGBoost."""


@dataclass(frozen=True)
class _Forest:
    """Every tree's nodes in one set of arrays (tree ``t``'s nodes from ``roots[t]``), so that all trees are
    walked together, one level per step.

    Attributes:
        left, right: a node's children; a leaf is its own (so a walk of ``depth - 1`` steps stays on the leaf
            it reaches, with no test of whether it has).
        split: a node's threshold, ``+inf`` at a leaf (where ``default_left`` is true), so every value, a
            missing one too, goes left from a leaf: onto itself.
        paired: every right child is its left sibling's next node (as XGBoost numbers them), so a step is one
            lookup of the left child.
        in_set: for categorical split ``k`` (``category_row[node] == k``), which categories go right.
        categorical: whether any node splits on a category.
    """

    roots: npt.NDArray[np.int64]
    left: npt.NDArray[np.int64]
    right: npt.NDArray[np.int64]
    feature: npt.NDArray[np.int64]
    threshold: npt.NDArray[np.float32]
    default_left: npt.NDArray[np.bool_]
    category_row: npt.NDArray[np.int64]
    in_set: npt.NDArray[np.bool_]
    depth: int
    categorical: bool
    split: npt.NDArray[np.float32]
    paired: bool

    @classmethod
    def from_json(cls, trees: list[dict[str, Any]]) -> _Forest:
        parts: dict[str, list[Any]] = {k: [] for k in ("left", "right", "feature", "threshold", "default", "cat")}
        roots: list[int] = []
        sets: list[list[int]] = []
        depth, offset = 1, 0
        for tree in trees:
            if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
                raise UnsupportedBoosterError("vector leaves")
            left = np.asarray(tree["left_children"], dtype=np.int64)
            right = np.asarray(tree["right_children"], dtype=np.int64)
            split_type = np.asarray(tree.get("split_type") or [0] * len(left), dtype=np.int64)
            category_row = np.full(len(left), -1, dtype=np.int64)
            values = tree.get("categories", [])
            nodes = zip(
                tree.get("categories_nodes", []),
                tree.get("categories_segments", []),
                tree.get("categories_sizes", []),
                strict=True,
            )
            for node, start, size in nodes:
                category_row[int(node)] = len(sets)
                sets.append([int(c) for c in values[start : start + size]])
            if (split_type[left >= 0] == 1).any() and (category_row[(split_type == 1) & (left >= 0)] < 0).any():
                raise UnsupportedBoosterError("a categorical split without its categories")
            roots.append(offset)
            parts["left"].append(np.where(left >= 0, left + offset, -1))
            parts["right"].append(np.where(right >= 0, right + offset, -1))
            parts["feature"].append(np.asarray(tree["split_indices"], dtype=np.int64))
            parts["threshold"].append(np.asarray(tree["split_conditions"], dtype=np.float32))
            parts["default"].append(np.asarray(tree["default_left"], dtype=bool))
            parts["cat"].append(category_row)
            depth = max(depth, _depth(left, right))
            offset += len(left)
        left_all, right_all = np.concatenate(parts["left"]), np.concatenate(parts["right"])
        leaf = left_all < 0
        left_all[leaf] = right_all[leaf] = np.flatnonzero(leaf)
        threshold = np.concatenate(parts["threshold"])
        default_left = np.concatenate(parts["default"])
        default_left[leaf] = True
        widest = max((max(c, default=0) for c in sets), default=0) + 1
        in_set = np.zeros((max(len(sets), 1), widest), dtype=bool)
        for row, categories in enumerate(sets):
            in_set[row, categories] = True
        return cls(
            roots=np.asarray(roots, dtype=np.int64),
            left=left_all,
            right=right_all,
            feature=np.concatenate(parts["feature"]),
            threshold=threshold,
            default_left=default_left,
            category_row=np.concatenate(parts["cat"]),
            in_set=in_set,
            depth=depth,
            categorical=bool(sets),
            split=np.where(leaf, np.float32(np.inf), threshold).astype(np.float32),
            paired=bool((right_all[~leaf] == left_all[~leaf] + 1).all()),
        )

    def leaves(self, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """``(rows, trees)``: the leaf value each row reaches in each tree (a leaf keeps its value in
        ``split_conditions``, as XGBoost writes it). Rows and trees are walked as one flat array; the tests of
        missing values and of categories are made only when the rows have a NaN or the forest a category."""
        rows, trees = len(x), len(self.roots)
        flat = np.ascontiguousarray(x).ravel()
        node = np.tile(self.roots, rows)
        row_start = np.repeat(np.arange(rows, dtype=np.int64) * x.shape[1], trees)
        has_missing = bool(np.isnan(flat).any())
        for _ in range(self.depth - 1):
            value = flat[row_start + self.feature[node]]
            go_left = value < self.split[node]
            if has_missing:
                missing = np.isnan(value)
                go_left = np.where(missing, self.default_left[node], go_left)
            if self.categorical:
                cat = self.category_row[node]
                is_cat = cat >= 0
                if is_cat.any():
                    code = np.where(np.isnan(value), -1, value).astype(np.int64)
                    valid = (code >= 0) & (code < self.in_set.shape[1])
                    right = valid & self.in_set[np.maximum(cat, 0), np.clip(code, 0, self.in_set.shape[1] - 1)]
                    go_left = np.where(is_cat, np.where(valid, ~right, self.default_left[node]), go_left)
            left = self.left[node]
            node = left + ~go_left if self.paired else np.where(go_left, left, self.right[node])
        return self.threshold[node].reshape(rows, trees)


def _depth(left: npt.NDArray[np.int64], right: npt.NDArray[np.int64]) -> int:
    depth = np.zeros(len(left), dtype=np.int64)
    for node in range(len(left)):  # XGBoost numbers children after their parent
        for child in (left[node], right[node]):
            if child >= 0:
                depth[child] = depth[node] + 1
    return int(depth.max()) + 1


class JsonBooster:
    """An XGBoost booster read from its JSON model, evaluated with numpy (:meth:`inplace_predict`)."""

    def __init__(self, raw: bytes) -> None:
        self._raw = bytes(raw)
        try:
            doc = json.loads(self._raw)
            learner = doc["learner"]
            params = learner["learner_model_param"]
            booster = learner["gradient_booster"]
            objective = learner["objective"]["name"]
            model = booster["model"]
            trees = model["trees"]
            n_parallel = int(model["gbtree_model_param"].get("num_parallel_tree", "1"))
            base = params["base_score"].strip("[]").split(",")
            self._n_features = int(params["num_feature"])
        except (KeyError, TypeError, ValueError) as err:
            raise UnsupportedBoosterError(f"not an XGBoost JSON model: {err}") from None
        if booster.get("name") != "gbtree" or n_parallel != 1 or int(params.get("num_target", "1")) != 1:
            raise UnsupportedBoosterError("only single-target gbtree models with one tree per round")
        if objective not in _IDENTITY_LINK or len(base) != 1:
            raise UnsupportedBoosterError(f"objective {objective} (identity-link regression only)")
        if any(int(t) != 0 for t in model.get("tree_info", [])):
            raise UnsupportedBoosterError("more than one output group")
        self._base = np.float32(float(base[0]))
        self._forest = _Forest.from_json(trees)

    def num_features(self) -> int:
        """Features per row the booster reads."""
        return self._n_features

    def inplace_predict(self, x: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """The booster's prediction for each row of ``x`` (rows × features, NaN for missing), as XGBoost's
        ``Booster.inplace_predict`` gives it (float32)."""
        matrix = np.asarray(x, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != self._n_features:
            raise ValueError(f"expected rows of {self._n_features} features, got shape {matrix.shape}")
        leaves = self._forest.leaves(matrix)
        total = np.full(len(matrix), self._base, dtype=np.float32)
        for column in leaves.T:  # tree by tree, in float32, as XGBoost adds them up
            total += column
        return total

    def save_raw(self, raw_format: str = "json") -> bytearray:
        """The JSON model it was read from (the only format it keeps)."""
        if raw_format != "json":
            raise ValueError("a JsonBooster keeps its JSON model only")
        return bytearray(self._raw)
