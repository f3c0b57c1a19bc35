"""Attack: HTML nested so deeply that a conversion walking the tree per block tag is
quadratic (660 KB took 103 s, 2 MB never finished), fed to ``kb add`` and ``web_fetch``.

Held: the whole-page converter is one pass over the tree, and ``web_fetch``'s deadline covers
the conversion too (it runs in a worker process that the deadline kills).
"""

from __future__ import annotations

import time

import anyio
import pytest

from pegboard.builtin.web_fetch import web_fetch
from pegboard.config.model import WebFetchConfig
from pegboard.errors import ToolExecutionError
from pegboard.htmltext import html_to_markdown
from tests.builtin.conftest import net, server
from tests.builtin.local_http import LocalServer, Reply

__all__ = ["net", "server"]  # the loopback HTTP server fixture and the socket guard

pytestmark = pytest.mark.anyio

LOOPBACK = WebFetchConfig(allow_networks=["127.0.0.1/32"])


def nested(levels: int, tags: tuple[str, ...] = ("div", "p")) -> str:
    opening = "".join(f"<{t}>" for t in tags)
    closing = "".join(f"</{t}>" for t in reversed(tags))
    return f"<html><body>{(opening + 'w ') * levels}end{closing * levels}</body></html>"


@pytest.mark.parametrize(
    "tags", [("div", "p"), ("li",), ("blockquote", "span"), ("h2", "div"), ("tr", "br")]
)
def test_a_deeply_nested_page_is_read_whole_in_one_pass(tags: tuple[str, ...]) -> None:
    levels = 40_000  # ~0.5-1 MB: minutes with a per-block tree walk, seconds in one pass
    page = nested(levels, tags)

    with anyio.from_thread.start_blocking_portal() as portal:
        text = portal.call(_convert_within, page, 60.0)  # a TimeoutError fails the test

    if tags[0] == "h2":  # a heading keeps its words (the outermost one takes them all)
        assert text.startswith("## w w w")
    assert text.split().count("w") == levels
    assert text.split()[-1] == "end"


async def _convert_within(page: str, seconds: float) -> str:
    """The conversion, in a worker process that is killed at the deadline."""
    with anyio.fail_after(seconds):
        return await anyio.to_process.run_sync(_whole, page, cancellable=True)


def _whole(page: str) -> str:
    return html_to_markdown(page, main_content=False).markdown


@pytest.mark.parametrize("unit", ["<a ", "</", "<", "<!", "<!-- a", '<a title="x', "<?"])
def test_tags_that_never_close_are_read_in_linear_time(unit: str) -> None:
    page = "<p>first</p>" + unit * 200_000 + "<p>last</p>"  # up to 2.2 MB of broken tags

    with anyio.from_thread.start_blocking_portal() as portal:
        text = portal.call(_convert_within, page, 60.0)

    assert text.startswith("first\n\n")
    assert text.endswith("last")


def test_blocks_still_end_in_a_blank_line_and_comments_are_left_out() -> None:
    page = "<div>a<p>b</p>c<!-- hidden --></div><ul><li>d</li><li>e</li></ul><br>f"
    assert html_to_markdown(page, main_content=False).markdown == "a\n\nb\n\nc\n\nd\n\ne\n\nf"


async def test_web_fetch_deadline_covers_the_conversion(server: LocalServer) -> None:
    # 2.6 MB of flat paragraphs: the main-content reader needs tens of seconds for it (a nested
    # page is cut short by lxml's depth limit and reads fast, so it cannot show the deadline).
    body = ("<html><body>" + "<p>w " * 520_000 + "</body></html>").encode()
    server.route("/deep", Reply(headers={"content-type": "text/html"}, body=body))
    config = LOOPBACK.model_copy(update={"timeout": 1.0})

    started = time.monotonic()
    with pytest.raises(ToolExecutionError) as caught:
        await web_fetch(server.url("/deep"), config=config)
    elapsed = time.monotonic() - started

    assert str(caught.value) == (
        f"reading {server.url('/deep')} ({len(body)} bytes of text/html) did not finish "
        "within 1 s ([web_fetch] timeout)"
    )
    assert elapsed < 10.0  # the deadline, not the conversion, ended the call
