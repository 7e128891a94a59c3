"""Columns of equal length as numpy arrays: what a bandwidth model is asked about, without pandas.

A plan asks the bandwidth model thousands of questions, but only through a few columns (message size, ranks,
nodes, instance type, …; :data:`~srifty.vocab.probes.TRANSFER_COLUMNS`). Reading them needs no DataFrame, and
importing pandas costs a cold ``srifty plan`` about half a second, so the simulator's queries and the model's
prediction path go through :class:`Table`; fitting and probe files keep pandas.

Values are read the way pandas reads them for the model (``pd.to_numeric(errors="coerce")`` and
``astype("string")``): a value that is not a number reads as NaN in a numeric column, and ``None``, NaN and
pandas' ``NA`` read as missing in a text column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from srifty.errors import ArtifactError, SriftyError

FloatArray = npt.NDArray[np.float64]
ObjectArray = npt.NDArray[np.object_]


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class Table:
    """Named one-dimensional columns of one length (``len(table)`` rows), read as numbers or as text.

    Build one with :func:`as_table` (from a DataFrame or a mapping of arrays); the arrays are not copied.
    """

    __slots__ = ("_columns", "_rows")

    def __init__(self, columns: Mapping[str, npt.NDArray[Any]], rows: int) -> None:
        self._columns = dict(columns)
        self._rows = rows

    @property
    def columns(self) -> tuple[str, ...]:
        """The column names, in the order given."""
        return tuple(self._columns)

    def __len__(self) -> int:
        return self._rows

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        """Column ``name`` as given, a numpy array (KeyError when absent)."""
        return self._columns[name]

    def raw(self, name: str) -> npt.NDArray[Any]:
        """Column ``name`` as given (KeyError when absent)."""
        return self._columns[name]

    def numeric(self, name: str) -> FloatArray:
        """Column ``name`` as float64; values that are not numbers (text, ``None``, ``NA``) become NaN."""
        values = self._columns[name]
        if values.dtype.kind in "biuf":
            return values.astype(np.float64)
        return np.fromiter((_as_float(v) for v in values), dtype=np.float64, count=len(values))

    def text(self, name: str) -> ObjectArray:
        """Column ``name`` as Python strings, ``None`` where missing (``None``, NaN, ``NA``)."""
        values = self._columns[name]
        out = np.empty(len(values), dtype=object)
        if values.dtype.kind in "US":
            out[:] = values.astype(str).tolist()
            return out
        # a str is never missing: tested first, without a call per value (plans read thousands of rows)
        out[:] = [v if type(v) is str else None if _is_missing(v) else str(v) for v in values.tolist()]
        return out

    def text_or(self, name: str, fill: str) -> npt.NDArray[np.str_]:
        """Column ``name`` as strings, ``fill`` where missing (an array of ``fill`` when the column is absent)."""
        if name not in self._columns:
            return np.full(self._rows, fill)
        return filled(self.text(name), fill)

    def take(self, rows: npt.NDArray[Any]) -> Table:
        """The rows selected by a boolean mask or an index array."""
        picked = {name: values[rows] for name, values in self._columns.items()}
        return Table(picked, len(next(iter(picked.values()))) if picked else int(np.count_nonzero(rows)))


def filled(values: ObjectArray, fill: str) -> npt.NDArray[np.str_]:
    """Text values (``None`` where missing, as :meth:`Table.text` gives them) as a string array, ``fill`` for
    each missing one."""
    return np.array([fill if value is None else value for value in values], dtype=str).reshape(len(values))


def as_table(frame: Any, error: type[SriftyError] = ArtifactError) -> Table:
    """``frame`` as a :class:`Table`: a Table itself, a pandas DataFrame, or a mapping of column names to arrays
    (or scalars, for one row).

    Raises:
        error: the columns have different lengths, or one is not one-dimensional (a bandwidth model raises its
            own error type).
    """
    if isinstance(frame, Table):
        return frame
    if hasattr(frame, "columns") and hasattr(frame, "iloc"):  # a pandas DataFrame, without importing pandas
        return Table({str(name): frame[name].to_numpy() for name in frame.columns}, len(frame))
    columns = {str(name): np.atleast_1d(np.asarray(values)) for name, values in frame.items()}
    lengths = {name: values.shape for name, values in columns.items()}
    if any(len(shape) != 1 for shape in lengths.values()) or len({shape for shape in lengths.values()}) > 1:
        described = ", ".join(f"{name}: {'x'.join(map(str, shape))}" for name, shape in lengths.items())
        raise error(f"the columns given have different lengths or are not one-dimensional ({described}).")
    return Table(columns, next(iter(lengths.values()))[0] if lengths else 0)
