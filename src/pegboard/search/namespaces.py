"""Namespace summaries: one searchable document per namespace, made of its tools.

A task often names the service more clearly than the operation ("a whois report and the
sitemap of a site"); scoring namespaces as documents lets every tool of a well-matching
namespace rise together, the way a person first picks the right server and then its tool.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pegboard.core.names import strip_mcp_namespace
from pegboard.search.document import FIELDS, ToolDocument
from pegboard.search.lexical import (
    BM25FParams,
    IndexedDoc,
    LexicalState,
    updated_state,
)
from pegboard.search.text import tokenize

if TYPE_CHECKING:
    import numpy as np

    from pegboard.search.lexical import IntArray
else:  # numpy loads on first use: a small stored index is ranked without it (search.flat)
    from pegboard._lazy import LazyModule

    np = LazyModule("numpy")

_NAME = FIELDS.index("name")
_DESCRIPTION = FIELDS.index("description")

# Name and label weigh most; member descriptions are long, so their length matters little.
NAMESPACE_PARAMS = BM25FParams(
    weights=(3.0, 0.0, 1.0, 1.0, 0.0), b=(0.3, 0.0, 0.3, 0.3, 0.0), renormalise_drift=0.2
)


def summary(namespace: str, label: str, members: Iterable[IndexedDoc]) -> IndexedDoc:
    """The namespace as one document: its label, member names and member descriptions.

    Built from the members' term counts, so nothing is tokenised twice.
    """
    label_text = " ".join(sorted({strip_mcp_namespace(namespace), strip_mcp_namespace(label)}))
    label_terms = Counter(tokenize(label_text))
    names: Counter[str] = Counter()
    descriptions: Counter[str] = Counter()
    for member in members:
        names.update(member.counts[_NAME])
        descriptions.update(member.counts[_DESCRIPTION])
    counts: tuple[Counter[str], ...] = (label_terms, Counter(), descriptions, names, Counter())
    doc = ToolDocument(
        name=namespace,
        namespace=namespace,
        label=label,
        fields={f: "" for f in FIELDS} | {"name": label_text},
    )
    return IndexedDoc(doc, counts, tuple(sum(c.values()) for c in counts))


def updated_spaces(
    spaces: LexicalState,
    docs: Mapping[str, IndexedDoc],
    changed: set[str],
) -> LexicalState:
    """``spaces`` with the summaries of the ``changed`` namespaces rebuilt from ``docs``."""
    if not changed:
        return spaces
    members: dict[str, list[IndexedDoc]] = {ns: [] for ns in changed}
    for indexed in docs.values():
        group = members.get(indexed.doc.namespace)
        if group is not None:
            group.append(indexed)
    upserts = [summary(ns, group[0].doc.label, group) for ns, group in members.items() if group]
    removals = [ns for ns, group in members.items() if not group]
    return updated_state(spaces, upserts, removals, NAMESPACE_PARAMS)


def space_slots(
    names: tuple[str | None, ...], docs: Mapping[str, IndexedDoc], spaces: LexicalState
) -> IntArray:
    """For each tool slot, the slot of its namespace summary (-1 for a free slot)."""
    out = np.full(len(names), -1, dtype=np.int64)
    for slot, name in enumerate(names):
        if name is not None:
            out[slot] = spaces.slots[docs[name].doc.namespace]
    return out
