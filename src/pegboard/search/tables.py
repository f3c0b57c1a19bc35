"""Mapped tables of numbers read without numpy: an embedding table's rows, a stored array.

A query reads a few rows of an embedding table and, for a small catalog, every vector of the
stored index: :class:`Table` views a mapped file's rows as Python sequences (a ``memoryview``
cast to the value type; float16 unpacked with ``struct``) and gives numpy a view of the same
pages when a bulk computation wants one (:meth:`Table.array`). ``.npy`` headers are parsed
here, as numpy's format documents them (magic, version, header length, a dict literal).
"""

from __future__ import annotations

import ast
import mmap
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pegboard.search.pages import keep as keep_pages

if TYPE_CHECKING:
    import numpy.typing as npt

# numpy dtype string -> struct/memoryview code of one value
CODES = {"|i1": "b", "|u1": "B", "<f2": "e", "<f4": "f", "<f8": "d", "<i8": "q"}
NPY_MAGIC = b"\x93NUMPY"


@dataclass(frozen=True, slots=True)
class Table:
    """``rows`` x ``dims`` values of type ``dtype`` at ``offset`` in ``pages`` (C order)."""

    pages: mmap.mmap | bytes
    offset: int
    rows: int
    dims: int
    dtype: str

    @property
    def code(self) -> str:
        return CODES[self.dtype]

    @property
    def itemsize(self) -> int:
        return struct.calcsize(self.code)

    def row(self, i: int) -> Sequence[float]:
        """Row ``i`` as Python numbers (float16 widened exactly)."""
        start = self.offset + i * self.dims * self.itemsize
        if self.code == "e":
            return struct.unpack_from(f"<{self.dims}e", self.pages, start)
        view: Any = memoryview(self.pages)[start : start + self.dims * self.itemsize]
        return cast("Sequence[float]", view.cast(self.code))

    def values(self) -> Sequence[float]:
        """Every value, row after row (a 1-D view; float16 unpacked)."""
        if self.code == "e":
            return struct.unpack_from(f"<{self.rows * self.dims}e", self.pages, self.offset)
        end = self.offset + self.rows * self.dims * self.itemsize
        view: Any = memoryview(self.pages)[self.offset : end]
        return cast("Sequence[float]", view.cast(self.code))

    def array(self) -> npt.NDArray[Any]:
        """The table as a numpy array viewing the same pages (numpy imported now)."""
        import numpy as np

        shape = (self.rows, self.dims)
        return np.ndarray(shape, dtype=np.dtype(self.dtype), buffer=self.pages, offset=self.offset)


def npy_table(path: Path, *, mapped: bool = True) -> Table:
    """The 1-D or 2-D array of the ``.npy`` file ``path``: mapped read-only (its pages released
    after each search) or, with ``mapped=False``, read into memory."""
    with path.open("rb") as f:
        head = f.read(10)
        if head[:6] != NPY_MAGIC or len(head) < 10:
            raise ValueError(f"{path} is not a .npy file")
        major = head[6]
        if major == 1:
            (length,), start = struct.unpack("<H", head[8:10]), 10
        else:
            f.seek(8)
            (length,), start = struct.unpack("<I", f.read(4)), 12
        f.seek(start)
        header = ast.literal_eval(f.read(length).decode("latin1"))
        if header.get("fortran_order") or header.get("descr") not in CODES:
            raise ValueError(f"{path}: unsupported array layout {header}")
        shape = tuple(header["shape"])
        if len(shape) not in (1, 2):
            raise ValueError(f"{path}: a {len(shape)}-D array, not a table")
        offset = start + length
        if mapped:
            pages: mmap.mmap | bytes = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            keep_pages(pages)
        else:
            pages, offset = f.read(), 0
    rows, dims = (shape[0], 1) if len(shape) == 1 else shape
    return Table(pages, offset, rows, dims, header["descr"])
