"""Windowed throughput and its confidence bound (paper, section "Continual Optimization").

The runtime keeps the iterations finished in the last ``K`` minutes (default 5). From their durations it
computes the mean iteration time and a 95% confidence interval of that mean (Student's t). The
*optimistic* bound (the shortest plausible mean duration) is what the controller projects with: it
re-plans only when even that projection misses the deadline or budget, so transient slowdowns do not
trigger costly switches.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from itertools import pairwise

from scipy.stats import t as student_t

from srifty.errors import SriftyError

DEFAULT_WINDOW_S = 300.0
MIN_SAMPLES = 5


@dataclass(frozen=True)
class ThroughputWindow:
    """Statistics of the iterations in the window (seconds and iterations per second)."""

    n_samples: int
    mean_iter_s: float
    std_iter_s: float
    optimistic_iter_s: float
    pessimistic_iter_s: float


class ProgressTracker:
    """Records when each iteration finished and summarises the recent ones.

    Args:
        window_s: how far back the window reaches (``K`` minutes in the paper).
        confidence: two-sided confidence level of the interval.
    """

    def __init__(self, window_s: float = DEFAULT_WINDOW_S, confidence: float = 0.95) -> None:
        if window_s <= 0 or not 0 < confidence < 1:
            raise SriftyError("the progress window must be positive and the confidence in (0, 1)")
        self.window_s = window_s
        self.confidence = confidence
        self._marks: deque[tuple[float, int]] = deque()
        self.iterations_done = 0
        self.last_time_s: float | None = None

    def record(self, iteration: int, time_s: float) -> None:
        """``iteration`` iterations are finished at ``time_s`` (record 0 at the start to time the first one)."""
        if self.last_time_s is not None and time_s < self.last_time_s:
            raise SriftyError(f"progress went back in time ({time_s} < {self.last_time_s})")
        self._marks.append((time_s, iteration))
        self.iterations_done = max(self.iterations_done, iteration)
        self.last_time_s = time_s
        while self._marks and self._marks[0][0] < time_s - self.window_s:
            self._marks.popleft()

    def reset_window(self, iteration: int, time_s: float) -> None:
        """Forget the window and start a new one at ``(iteration, time_s)`` (after a switch, the old
        configuration's throughput says nothing about the new one)."""
        self._marks.clear()
        self._marks.append((time_s, iteration))

    def window(self) -> ThroughputWindow | None:
        """Statistics of the window, or ``None`` with fewer than :data:`MIN_SAMPLES` durations."""
        steps = [((t1 - t0) / (n1 - n0), n1 - n0) for (t0, n0), (t1, n1) in pairwise(self._marks) if n1 > n0]
        durations = [d for d, _ in steps]
        weights = [w for _, w in steps]
        if sum(weights) < MIN_SAMPLES or len(durations) < 2:
            return None
        total = sum(weights)
        mean = sum(d * w for d, w in zip(durations, weights, strict=True)) / total
        var = sum(w * (d - mean) ** 2 for d, w in zip(durations, weights, strict=True)) / max(total - 1, 1)
        std = math.sqrt(var)
        half = float(student_t.ppf(0.5 + self.confidence / 2, df=max(total - 1, 1))) * std / math.sqrt(total)
        optimistic = max(mean - half, mean * 1e-3)
        return ThroughputWindow(total, mean, std, optimistic, mean + half)
