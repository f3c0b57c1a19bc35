"""Tables and messages on the terminal: text shown as written, one line per row.

Everything a user or a server wrote (descriptions, errors, paths) is printed as plain text,
never as rich markup, so ``[gateway]`` stays ``[gateway]``. Tables never cut the columns a
user copies (names, ids); the description-like column gets one line, cut with "…" to fit
the terminal, or whole lines with ``--wide``. Piped output is not cut at all: one row per
line, for grep.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported when something is printed (start-up time)
    from rich.console import Console

# Piped output is never cut; rich still needs a width to lay the table out.
PIPE_WIDTH = 100_000
# A description cut shorter than this says nothing; the table then overflows instead.
MIN_FLEX_WIDTH = 12


@dataclass(frozen=True, slots=True)
class Column:
    """A table column; ``key`` columns (names, ids) are never cut or wrapped."""

    header: str
    key: bool = False


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
    from rich import box
    from rich.table import Table
    from rich.text import Text

    out = out or console()
    if not out.is_terminal and not os.environ.get("COLUMNS"):
        out.width = PIPE_WIDTH  # piped, width not fixed by the user: cut nothing
    cells = [[Text(str(cell)) for cell in row] for row in rows]
    natural = [
        max([len(c.header), *(row[i].cell_len for row in cells)]) for i, c in enumerate(columns)
    ]
    limits = _flexible_widths(columns, natural, out.width)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column, width, limit in zip(columns, natural, limits, strict=True):
        if column.key:
            table.add_column(column.header, no_wrap=True, min_width=width)
        elif wide:
            table.add_column(column.header, overflow="fold")
        else:
            table.add_column(column.header, no_wrap=True, overflow="ellipsis", max_width=limit)
    for row in cells:
        table.add_row(*row)
    out.print(Text(title))
    out.print(table)


def _flexible_widths(columns: Sequence[Column], natural: Sequence[int], total: int) -> list[int]:
    """Widths for the non-key columns: what the key columns leave, shared by natural width."""
    gaps = 3 * (len(columns) - 1)  # a space, the (blank) border and a space between columns
    fixed = sum(w for c, w in zip(columns, natural, strict=True) if c.key)
    room = max(total - fixed - gaps, 0)
    flexible = sum(w for c, w in zip(columns, natural, strict=True) if not c.key) or 1
    if flexible <= room:
        return list(natural)
    return [
        w if c.key else max(MIN_FLEX_WIDTH, room * w // flexible)
        for c, w in zip(columns, natural, strict=True)
    ]


def print_error(message: str) -> None:
    """``error: <message>`` on stderr, the message verbatim."""
    from rich.text import Text

    text = Text("error: ", style="bold red")
    text.append(message)
    console(stderr=True).print(text, soft_wrap=True)
