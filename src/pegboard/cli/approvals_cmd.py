"""``pegboard approvals``: the gated calls that wait for a person, and deciding them."""

from __future__ import annotations

import getpass
import json
import time
from typing import TYPE_CHECKING, Annotated

import typer

from pegboard.cli._common import EXIT_NOT_FOUND, echo_json, fail, run, service
from pegboard.cli.help import PlainCommand, PlainGroup
from pegboard.core.redact import shown
from pegboard.errors import ApprovalNotPending

if TYPE_CHECKING:
    from pegboard.calls.pending import PendingApproval
    from pegboard.service.approvals import Verdict

app = typer.Typer(
    cls=PlainGroup,
    help="List, approve and deny gated calls waiting for a person.",
    no_args_is_help=True,
)


def _row(item: PendingApproval, now: float) -> dict[str, object]:
    return {
        "id": item.id,
        "tool": item.request.tool_name,
        "arguments": dict(item.request.arguments),
        "principal": item.principal,
        "asked_by": item.asked_by,
        "created_at": item.created_at,
        "expires_at": item.expires_at,
        "status": item.status(now),
        "decision": item.decision,
        "decided_by": item.decided_by,
        "reason": item.reason,
    }


@app.command("list", cls=PlainCommand)
def list_cmd(
    ctx: typer.Context,
    history: Annotated[bool, typer.Option("--all", help="Also the decided and expired.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Show the gated calls waiting for a decision (id, tool, arguments, who asked, age)."""
    services = service(ctx)

    async def body() -> None:
        listed = await services.approvals.listed()
        now = time.time()
        items = listed.pending + (listed.history if history else [])
        if as_json:
            echo_json([_row(i, now) for i in items])
            return
        if not items:
            typer.echo("nothing waits for a decision")
            return
        for item in items:
            args = shown(json.dumps(dict(item.request.arguments), ensure_ascii=False))
            age = int(now - item.created_at)
            state = item.status(now) if item.decision is None else item.decision
            typer.echo(
                f"{item.id[:8]}  {state}  {shown(item.request.tool_name)} {args}  "
                f"asked by {shown(item.principal)} via {shown(item.asked_by)}, {age} s ago"
            )

    try:
        run(body)
    finally:
        services.close()


def _decide(ctx: typer.Context, approval_id: str, verdict: Verdict, reason: str) -> None:
    services = service(ctx)

    async def body() -> None:
        who = f"cli:{getpass.getuser()}"
        try:
            item = await services.approvals.decide(
                approval_id, verdict, decided_by=who, reason=reason
            )
        except ApprovalNotPending as exc:
            fail(str(exc), EXIT_NOT_FOUND)
        typer.echo(f"{item.id[:8]}: {item.decision} ({shown(item.request.tool_name)})")

    try:
        run(body)
    finally:
        services.close()


@app.command("approve", cls=PlainCommand)
def approve_cmd(
    ctx: typer.Context,
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The request id (8 chars do).")],
    for_a_while: Annotated[
        bool,
        typer.Option("--for-a-while", help="Cover the identical call for 30 min, not once."),
    ] = False,
) -> None:
    """Let the identical call run when the model retries it (once, or for a while)."""
    _decide(ctx, approval_id, "while" if for_a_while else "once", "")


@app.command("deny", cls=PlainCommand)
def deny_cmd(
    ctx: typer.Context,
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The request id (8 chars do).")],
    reason: Annotated[str, typer.Option("--reason", help="Why (the model reads it).")] = "",
) -> None:
    """Refuse the call; its retry is refused with the reason."""
    _decide(ctx, approval_id, "deny", reason)
