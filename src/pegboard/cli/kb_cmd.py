"""``pegboard kb``: add files to a knowledge base, list, search and remove bases.

Everything heavy (numpy, the embedding model, the HTML and PDF parsers) loads inside the
command that needs it, so ``pegboard --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pegboard.cli._common import EXIT_FAILED, EXIT_NOT_FOUND, EXIT_USAGE, echo_json, fail, load
from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.cli.render import Column, print_table
from pegboard.core.wording import plural
from pegboard.errors import KnowledgeBaseError

if TYPE_CHECKING:
    from pegboard.kb import BaseInfo

app = typer.Typer(
    cls=PlainGroup,
    help="Knowledge bases: local files that kb_search finds by meaning.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
NameArg = Annotated[str, typer.Argument(help="Knowledge-base name (letters, digits, . _ -).")]


def _store(ctx: typer.Context) -> Path:
    from pegboard.kb import kb_path

    return kb_path(load(ctx).data_dir)


def _require(db: Path, name: str) -> None:
    from pegboard.kb import list_bases

    if name not in {b.name for b in list_bases(db)}:
        fail(f"no knowledge base named {name!r}; see `pegboard kb list`", EXIT_NOT_FOUND)


@app.command("add", cls=PlainCommand)
def add(
    ctx: typer.Context,
    name: NameArg,
    paths: Annotated[list[str], typer.Argument(help="Files or directories (recursive).")],
    model: Annotated[
        str | None,
        typer.Option(
            help="Embedding model of a new base: minilm-l6 (the default), minilm-static "
            "(the fast static table) or wordllama."
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            "-x",
            help="Leave out files matching this glob, relative to the folder ('_sources', "
            "'*.txt'); repeatable, remembered for later adds.",
        ),
    ] = None,
    forget_excludes: Annotated[
        bool, typer.Option("--forget-excludes", help="Drop the excludes remembered before.")
    ] = False,
) -> None:
    """Add files to a knowledge base, creating it if needed.

    Reads Markdown, text, HTML and PDF files; unchanged files are not re-read. Excludes
    given before, and those of [kb.NAME] in the config, apply too; indexed files they now
    match are taken out.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from pegboard.kb import check_base_name, ingest, kb_path
    from pegboard.kb.embedding import MODELS
    from pegboard.kb.excludes import check_patterns

    loaded = load(ctx)
    db = kb_path(loaded.data_dir)
    settings = loaded.config.kb.get(name)
    try:
        check_base_name(name)
        check_patterns(exclude or ())
        check_patterns(settings.exclude if settings else ())
    except KnowledgeBaseError as exc:
        fail(str(exc), EXIT_USAGE)
    if model is not None and model not in MODELS:
        fail(f"unknown embedding model {model!r}; use one of {', '.join(MODELS)}", EXIT_USAGE)
    err = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[file]}"),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(f"kb {name}", total=None, file="")

        def progress(done: int, total: int, current: str) -> None:
            bar.update(task, completed=done, total=total, file=Path(current).name)

        try:
            report = ingest(
                db,
                name,
                paths,
                model=model,
                progress=progress,
                exclude=exclude or (),
                config_exclude=settings.exclude if settings else (),
                forget_excludes=forget_excludes,
            )
        except KnowledgeBaseError as exc:
            fail(str(exc))
    for skipped in report.skipped:
        err.print(
            f"warning: skipped {skipped.reason}", markup=False, highlight=False, soft_wrap=True
        )
    removed = f", {len(report.removed)} removed (excluded)" if report.removed else ""
    kept = f", {report.reused} kept from before" if report.reused else ""
    typer.echo(
        f"{name}: {plural(len(report.indexed), 'file')} indexed "
        f"({plural(report.chunks, 'chunk')}{kept}), "
        f"{len(report.unchanged)} unchanged, {len(report.skipped)} skipped{removed}"
    )
    if report.excludes:
        typer.echo(f"excluded: {', '.join(report.excludes)}")
    if not report.indexed and not report.unchanged and not report.removed:
        fail("nothing was added: no readable Markdown, text, HTML or PDF file under the paths")


@app.command("list", cls=PlainCommand)
def list_cmd(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Show the knowledge bases: document and chunk counts, model, excludes."""
    from pegboard.kb import list_bases

    loaded = load(ctx)
    try:
        bases = list_bases(_store(ctx))
    except KnowledgeBaseError as exc:
        fail(str(exc))

    def excludes(base: BaseInfo) -> list[str]:
        configured = loaded.config.kb.get(base.name)
        return list(dict.fromkeys((*base.excludes, *(configured.exclude if configured else ()))))

    if as_json:
        echo_json(
            [
                {
                    "name": b.name,
                    "documents": b.documents,
                    "chunks": b.chunks,
                    "model": b.model,
                    "excludes": excludes(b),
                }
                for b in bases
            ]
        )
        return
    if not bases:
        typer.echo("no knowledge bases yet; create one with `pegboard kb add NAME PATH...`")
        return
    columns = [Column(c, key=True) for c in ("name", "documents", "chunks", "model")]
    columns.append(Column("excludes"))
    rows = [
        [b.name, str(b.documents), str(b.chunks), b.model, " ".join(excludes(b)) or "-"]
        for b in bases
    ]
    print_table(f"{len(bases)} knowledge bases", columns, rows)


@app.command("search", cls=PlainCommand)
def search_cmd(
    ctx: typer.Context,
    name: NameArg,
    query: Annotated[str, typer.Argument(help="A question, in your own words.")],
    top_k: Annotated[
        int, typer.Option("--top-k", "-k", min=1, max=100, help="Results to show.")
    ] = 5,
    chunks: Annotated[
        bool, typer.Option("--chunks", help="Show passages, several per document if they match.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Find the documents of a base that answer QUERY (one result each, its best passage).

    Ranked by meaning and by words, fused.
    """
    from pegboard.kb import search_base

    db = _store(ctx)
    _require(db, name)
    try:
        hits = search_base(db, name, query, top_k=top_k, chunks=chunks)
    except KnowledgeBaseError as exc:
        fail(str(exc), EXIT_USAGE if not query.strip() else EXIT_FAILED)
    if as_json:
        echo_json(
            [
                {"source": h.source, "title": h.title, "snippet": h.snippet, "score": h.score}
                for h in hits
            ]
        )
        return
    if not hits:
        typer.echo(f"nothing in {name} matches; try other words")
    for rank, h in enumerate(hits, start=1):
        typer.echo(f"{rank}. {h.title}  ({h.source}, score {h.score:.4f})\n   {h.snippet}")


@app.command("remove", cls=PlainCommand)
def remove_cmd(
    ctx: typer.Context,
    name: NameArg,
    path: Annotated[str | None, typer.Argument(help="Only this file or directory.")] = None,
) -> None:
    """Remove a knowledge base, or only the documents at or under PATH."""
    import os

    from pegboard.kb import remove

    db = _store(ctx)
    _require(db, name)
    target = os.path.realpath(os.path.expanduser(path)) if path is not None else None
    try:
        count = remove(db, name, target)
    except KnowledgeBaseError as exc:
        fail(str(exc))
    if target is None:
        typer.echo(f"removed knowledge base {name} ({plural(count, 'document')})")
    elif count == 0:
        fail(
            f"{name} has no document at or under {target}; see `pegboard kb search`", EXIT_NOT_FOUND
        )
    else:
        typer.echo(f"removed {plural(count, 'document')} under {target} from {name}")
