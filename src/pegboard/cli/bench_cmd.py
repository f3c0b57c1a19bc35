"""``pegboard bench``: measure tool search on labelled catalogs, against baselines."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.core.wording import plural
from pegboard.errors import ConfigError

if TYPE_CHECKING:  # imported in the command: pegboard.bench and rich cost every CLI start-up
    from rich.table import Table

    from pegboard.bench.runner import SearchBenchmark

app = typer.Typer(cls=PlainGroup, help="Benchmarks that anyone can rerun.", no_args_is_help=True)


def _parse_ks(text: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a comma-separated list of integers") from None
    if not ks or ks[0] < 1:
        raise typer.BadParameter("k values must be positive integers, e.g. 1,3,5,10")
    return ks


@app.command("search", cls=PlainCommand)
def search(
    tools: Annotated[
        list[Path],
        typer.Option("--tools", metavar="PATH", help="tools.jsonl; repeat to pool catalogs."),
    ],
    queries: Annotated[
        list[Path], typer.Option("--queries", metavar="PATH", help="queries.jsonl; repeatable.")
    ],
    k: Annotated[
        str, typer.Option("--k", metavar="K,K,...", help="Cut-offs for hit@k and recall@k.")
    ] = "1,3,5,10",
    method: Annotated[
        list[str] | None,
        typer.Option("--method", metavar="NAME", help="Run only these methods (repeatable)."),
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample", min=1, metavar="N", help="Evenly spaced sample of N queries from each file."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Rank every query with pegboard's search and the baselines; print hit@k, recall@k, MRR."""
    from rich.console import Console

    from pegboard.bench.baselines import available_methods
    from pegboard.bench.runner import run_search_benchmark

    ks = _parse_ks(k)
    known = available_methods()
    method = method or []
    unknown = [m for m in method if m not in known]
    if unknown:
        typer.echo(f"error: unknown method {', '.join(unknown)}; choose from {', '.join(known)}")
        raise typer.Exit(2)
    chosen = [known[name]() for name in (method or list(known))]
    try:
        report = run_search_benchmark(tools, queries, chosen, ks=ks, sample=sample)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if as_json:
        typer.echo(json.dumps(asdict(report), indent=2))
    else:
        Console(width=200).print(_table(report))


def _table(report: SearchBenchmark) -> Table:
    from rich.table import Table

    table = Table(title=f"tool search over {plural(report.tools, 'tool')}")
    columns = ["dataset", "method", "queries"]
    columns += [f"hit@{k}" for k in report.ks] + [f"recall@{k}" for k in report.ks]
    columns += ["MRR", "p50 ms", "p99 ms", "build s"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("dataset", "method") else "right")
    ordered = sorted(report.results, key=lambda r: r.dataset)
    for r in ordered:
        table.add_row(
            r.dataset,
            r.method,
            str(r.queries),
            *(f"{r.hit[k]:.3f}" for k in report.ks),
            *(f"{r.recall[k]:.3f}" for k in report.ks),
            f"{r.mrr:.3f}",
            f"{r.p50_ms:.2f}",
            f"{r.p99_ms:.2f}",
            f"{r.build_s:.3f}",
        )
    return table
