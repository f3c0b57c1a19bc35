"""Hiding secrets and neutralising untrusted text before people or the model see it.

``mask`` replaces configured secret values (an ``env`` or ``headers`` value of a server) in any
text, ``redact_url`` hides URL credentials and secret-looking query parameters, and
``public_reason`` turns a server's failure reason into a fixed, escaped phrase: stderr and
server-sent text never reach the model or a status line (people read stderr with
``pegboard servers logs``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
# Values shorter than this are not masked: "1" or "on" would shred every log line.
MIN_SECRET_LENGTH = 4
_SECRET_PARAM = re.compile(
    r"(key|token|secret|passw|pwd|sig|signature|auth|credential|session|cookie)", re.I
)


def mask(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret value replaced by ``***``."""
    values = sorted(
        {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True
    )
    for value in values:
        text = text.replace(value, MASK)
    return text


def is_secret_key(name: str) -> bool:
    """Whether a header, query parameter or env name looks like it holds a credential."""
    return bool(_SECRET_PARAM.search(name))


def redact_url(url: str) -> str:
    """``url`` with ``user:password@`` and secret-looking query parameters masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if is_secret_key(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_EXIT = re.compile(r"exited with (?:exit )?code (-?\d+)")
_TIMEOUT = re.compile(
    r"\b(initialize|tools/list|tool '[\w.-]{1,128}') "
    r"(?:timed out after|did not answer within) (\d+(?:\.\d+)?)s"
)
_RETRY = re.compile(r"retrying in (\d+)s after (\d+) failures")
_TOO_BIG = re.compile(r"larger than (\d+) bytes")
_FIXED = (
    (re.compile(r"no such file|not found|ENOENT", re.I), "failed to start: command not found"),
    (re.compile(r"permission denied|EACCES", re.I), "failed to start: permission denied"),
    (re.compile(r"refused|connect(ion)? attempts failed|ConnectError", re.I), "connection refused"),
    (re.compile(r"timed out|timeout", re.I), "timed out"),
    (re.compile(r"closed its stdin", re.I), "server closed its stdin"),
    (re.compile(r"cancelled", re.I), "refresh cancelled"),
    (re.compile(r"not active", re.I), "not active"),
    (re.compile(r"launch definition changed", re.I), "launch definition changed; needs trust"),
    (re.compile(r"connection closed", re.I), "connection closed"),
)


def public_reason(reason: str) -> str:
    """A fixed phrase for a failure reason ("failed to start: exit code 3").

    Only pegboard's own wording survives, rebuilt from numbers; anything a server wrote
    (stderr, an error message) is dropped, so the result is safe inside a prompt.
    """
    text = reason.split(" (stderr:", 1)[0]
    if match := _EXIT.search(text):
        return f"failed to start: exit code {match.group(1)}"
    if match := _TIMEOUT.search(text):
        return f"{match.group(1)} timed out after {match.group(2)}s"
    if match := _RETRY.search(text):
        return f"retrying in {match.group(1)}s after {match.group(2)} failures"
    if match := _TOO_BIG.search(text):
        return f"sent a message larger than {match.group(1)} bytes"
    for pattern, phrase in _FIXED:
        if pattern.search(text):
            return phrase
    return "failed (details: pegboard servers logs)"


_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape_markup(text: str) -> str:
    """``text`` safe inside a ``<tag>...</tag>`` prompt wrapper (no tag can be closed)."""
    return re.sub(r"[&<>]", lambda m: _ESCAPES[m.group(0)], text)
