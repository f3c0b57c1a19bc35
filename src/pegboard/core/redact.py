"""Hiding secrets and neutralising untrusted text before people or the model see it.

``mask`` replaces configured secret values (an ``env`` or ``headers`` value of a server) in any
text, ``redact_url`` hides URL credentials and secret-looking query parameters. (A server's
failure reason becomes a fixed phrase with :func:`pegboard.errors.public_reason`, which
:class:`~pegboard.errors.ServerUnavailable` applies itself.) ``shown`` is the one way text
reaches a person who decides on it (approval prompts on the terminal and by elicitation,
status lines, log records): characters that reorder, hide or rewrite what is displayed are
written as visible escapes.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any
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


# Values that are credentials whatever their name: provider key prefixes, a password in a URL.
SECRET_VALUE = re.compile(
    r"^(sk-|ghp_|gho_|github_pat_|xox[abpr]-|AKIA|glpat-)|://[^/@\s]+:[^/@\s]+@"
)


def looks_secret(name: str, value: object) -> bool:
    """Whether an env variable, header or option holds a credential, by name or by value."""
    return is_secret_key(name) or (isinstance(value, str) and bool(SECRET_VALUE.search(value)))


def redact_args(args: list[str] | tuple[str, ...]) -> list[str]:
    """A command line with credential-looking literals masked: ``--api-key=sk-...``, the value
    after ``--token``, a bare ``sk-...`` or ``ghp_...``, a URL's ``user:password@``."""
    out: list[str] = []
    hide_next = False
    for arg in args:
        name, eq, value = arg.partition("=")
        flag = arg.startswith("-") and not arg.startswith("---")
        if hide_next and not arg.startswith("-"):
            out.append(MASK)
        elif flag and eq and looks_secret(name.lstrip("-"), value):
            out.append(f"{name}={MASK}")
        elif SECRET_VALUE.search(arg):
            out.append(redact_url(arg) if "://" in arg else MASK)
        else:
            out.append(arg)
        hide_next = flag and not eq and is_secret_key(arg.lstrip("-"))
    return out


def is_secret_key(name: str) -> bool:
    """Whether a header, query parameter or env name looks like it holds a credential."""
    return bool(_SECRET_PARAM.search(name))


_INNER_USERINFO = re.compile(r"(://)[^/?#@]*@")


def redact_url(url: str) -> str:
    """``url`` with ``user:password@`` and secret-looking query parameters masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    # A URI wrapped in another (pegboard://server/db://user:pw@host) has its userinfo in the
    # outer path.
    path = _INNER_USERINFO.sub(rf"\1{MASK}@", parts.path)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if is_secret_key(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


# What a person must see as an escape to read text as it is: C0 controls but tab and newline
# (ESC starts terminal sequences, CR overwrites a line), DEL and C1 controls (U+009B is a
# one-byte CSI), bidi embeddings, overrides, isolates and marks (U+202E turns
# "\u202etxt.exe" around), zero-width and other invisible characters, line and paragraph
# separators, and Unicode tag characters (hidden ASCII).
_UNSHOWABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2069\ufeff\U000e0000-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def shown(text: str) -> str:
    """``text`` as a person should read it: every control, bidi, zero-width or tag character
    written as ``\\uXXXX`` (``\\U000XXXXX``), so nothing displays reordered or hidden."""
    return _UNSHOWABLE.sub(_escape, text)


_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape_markup(text: str) -> str:
    """``text`` safe inside a ``<tag>...</tag>`` prompt wrapper (no tag can be closed)."""
    return re.sub(r"[&<>]", lambda m: _ESCAPES[m.group(0)], text)


_URL = re.compile(r"""[a-z][a-z0-9+.-]*://[^\s'"<>]+""", re.I)


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with URL credentials and secret parameters, and ``secrets``, masked."""
    return mask(_URL.sub(lambda m: redact_url(m.group(0)), text), secrets)


class _LogRedaction:
    """A log-record factory masking secrets in every record, pegboard's and libraries'
    (the MCP SDK and httpx log request URLs, which may carry credentials)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.secrets: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        try:
            text = record.getMessage()
        except Exception:  # a broken format string is logging's problem, not ours
            return record
        cleaned = shown(redact_text(text, self.secrets))
        if cleaned != text:
            record.msg, record.args = cleaned, None
        return record


_installed: _LogRedaction | None = None


def redact_logs(secrets: Iterable[str]) -> None:
    """Mask URL credentials and ``secrets`` in every log record from now on (idempotent;
    later calls add secrets)."""
    global _installed
    if _installed is None:
        _installed = _LogRedaction(logging.getLogRecordFactory())
        logging.setLogRecordFactory(_installed)
    with _installed.lock:
        _installed.secrets.update(s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH)
