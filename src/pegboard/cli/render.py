"""Tables and messages on the terminal: text shown as written, one line per row.

Everything a user or a server wrote (descriptions, errors, paths) is printed as plain text,
never as rich markup, so ``[gateway]`` stays ``[gateway]``. Tables never cut the columns a
user copies (names, ids); the description-like column gets one line, cut with "…" to fit
the terminal, or whole lines with ``--wide``; on a narrow terminal optional columns go first.
Piped output is not cut at all: one row per line, for grep, without trailing padding.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported when something is printed (start-up time)
    from rich.console import Console

# Piped output is never cut; rich still needs a width to lay the table out.
PIPE_WIDTH = 100_000
# A description cut shorter than this says nothing: optional columns make room first, and
# when nothing is left to drop the table overflows the terminal instead.
MIN_FLEX_WIDTH = 16
GAP = 3  # a space, the (blank) border and a space between columns
# What makes rich style its output or measure a terminal even when stdout is not one.
TERMINAL_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS")


@dataclass(frozen=True, slots=True)
class Column:
    """A table column. ``key`` columns (names, ids, states) are never cut or wrapped; an
    ``optional`` one is left out, rightmost first, when the terminal is too narrow to keep
    every key column and give each other column :data:`MIN_FLEX_WIDTH` characters."""

    header: str
    key: bool = False
    optional: bool = False


def console(*, stderr: bool = False) -> Console:
    """A console that prints text as given (no markup, no highlighting of numbers)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, markup=False)


def print_table(
    title: str,
    columns: Sequence[Column],
    rows: Iterable[Sequence[str]],
    *,
    wide: bool = False,
    out: Console | None = None,
) -> None:
    """Print ``title`` then ``rows`` under ``columns``; see the module docstring for the fit."""
    if out is None and not wide:
        rows = [[str(cell) for cell in row] for row in rows]
        if (sizes := _unstyled_width()) is not None and (
            text := plain_table(title, columns, rows, *sizes)
        ) is not None:
            sys.stdout.write(text)
            return
    from rich import box
    from rich.table import Table
    from rich.text import Text

    out = out or console()
    piped = not out.is_terminal and not os.environ.get("COLUMNS")
    width = PIPE_WIDTH if piped else out.width
    cells = [[Text(str(cell)) for cell in row] for row in rows]
    natural = [
        max([len(c.header), *(row[i].cell_len for row in cells)]) for i, c in enumerate(columns)
    ]
    kept = _kept_columns(columns, natural, width)
    widths = _widths([columns[i] for i in kept], [natural[i] for i in kept], width)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i, limit in zip(kept, widths, strict=True):
        column = columns[i]
        if column.key:
            table.add_column(column.header, no_wrap=True, width=limit)
        elif wide:
            table.add_column(column.header, overflow="fold", width=limit)
        else:
            table.add_column(column.header, no_wrap=True, overflow="ellipsis", width=limit)
    for row in cells:
        table.add_row(*(row[i] for i in kept))
    # Too narrow even without the optional columns: overflow rather than cut a key column.
    needed = sum(widths) + GAP * (len(widths) - 1)
    out.print(Text(title))
    out.width = max(width, needed)  # print(width=) cannot exceed the console's own width
    if not piped:
        out.print(table)
        return
    with out.capture() as captured:  # piped: one row a line, no padding after the last cell
        out.print(table)
    out.file.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def _unstyled_width() -> tuple[int, int] | None:
    """(table width, title width) as rich lays them out when stdout is not a terminal (and
    nothing forces one): piped, the table :data:`PIPE_WIDTH` and the title the narrowest
    terminal of the standard streams (at most 80, rich's default); with ``COLUMNS``, both
    ``COLUMNS``. None where rich must decide."""
    if sys.stdout.isatty() or any(os.environ.get(name) for name in TERMINAL_ENV):
        return None
    columns = os.environ.get("COLUMNS")
    if columns:
        return (int(columns), int(columns)) if columns.isdigit() else None
    title = 80
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError, ValueError):
            title = min(title, os.get_terminal_size(fd).columns)
    return PIPE_WIDTH, title


def plain_table(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    title_width: int,
) -> str | None:
    """What :func:`print_table` prints of one-line cells on an unstyled console: the table
    ``width`` wide (:data:`PIPE_WIDTH`: piped, lines not padded), the title on a line of
    ``title_width``; None when only rich can lay it out (no rows, a title it would wrap, a
    cell it would expand or strip)."""
    from rich.cells import cell_len, set_cell_size

    headers = [c.header for c in columns]
    cells = itertools.chain([title], headers, *rows)
    if not rows or not all(cell.isprintable() for cell in cells):
        return None
    if cell_len(title) > title_width:
        return None
    natural = [
        max([cell_len(c.header), *(cell_len(row[i]) for row in rows)])
        for i, c in enumerate(columns)
    ]
    kept = _kept_columns(columns, natural, width)
    widths = _widths([columns[i] for i in kept], [natural[i] for i in kept], width)

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, limit in zip(kept, widths, strict=True):
            cell = cells[i]
            if cell_len(cell) > limit:
                cell = set_cell_size(cell, limit - 1) + "…"
            out.append(set_cell_size(cell, limit))
        return (" " * GAP).join(out)

    rule = "─" * (sum(widths) + GAP * (len(widths) - 1))
    lines = [line(headers), rule, *(line(row) for row in rows)]
    if width == PIPE_WIDTH:
        lines = [text.rstrip() for text in lines]
    return "".join(f"{text}\n" for text in [title, *lines])


def _kept_columns(columns: Sequence[Column], natural: Sequence[int], total: int) -> list[int]:
    """The indices of the columns shown: all, less optional ones (rightmost first) while
    the key columns and :data:`MIN_FLEX_WIDTH` per other column do not fit ``total``."""
    kept = list(range(len(columns)))
    optional = [i for i in kept if columns[i].optional]
    while optional and _floor([columns[i] for i in kept], [natural[i] for i in kept]) > total:
        kept.remove(optional.pop())
    return kept


def _floor(columns: Sequence[Column], natural: Sequence[int]) -> int:
    """The narrowest width of these columns: key ones whole, others cut to the minimum."""
    cells = sum(
        w if c.key else min(w, MIN_FLEX_WIDTH) for c, w in zip(columns, natural, strict=True)
    )
    return cells + GAP * (len(columns) - 1)


def _widths(columns: Sequence[Column], natural: Sequence[int], total: int) -> list[int]:
    """Key columns at their natural width; the others get at least the minimum (or their
    natural width when smaller), then share what is left in proportion to what they lack."""
    room = (
        total
        - GAP * (len(columns) - 1)
        - sum(w for c, w in zip(columns, natural, strict=True) if c.key)
    )
    flexible = [i for i, c in enumerate(columns) if not c.key]
    if sum(natural[i] for i in flexible) <= room:
        return list(natural)
    widths = [w if c.key else min(w, MIN_FLEX_WIDTH) for c, w in zip(columns, natural, strict=True)]
    left = room - sum(widths[i] for i in flexible)
    lacking = {i: natural[i] - widths[i] for i in flexible}
    want = sum(lacking.values())
    if left > 0 and want:
        for i in flexible:
            widths[i] += left * lacking[i] // want
    return widths


def print_error(message: str) -> None:
    """``error: <message>`` on stderr, the message verbatim."""
    from rich.text import Text

    text = Text("error: ", style="bold red")
    text.append(message)
    console(stderr=True).print(text, soft_wrap=True)
