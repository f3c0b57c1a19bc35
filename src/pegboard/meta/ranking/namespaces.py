"""Namespace summaries: one searchable document per namespace, made of its tools.

A task often names the service more clearly than the operation ("a whois report and the
sitemap of a site"); scoring namespaces as documents lets every tool of a well-matching
namespace rise together, the way a person first picks the right server and then its tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from pegboard.meta.ranking.document import ToolDocument
from pegboard.meta.ranking.lexical import (
    BM25FParams,
    IndexedDoc,
    IntArray,
    LexicalState,
    updated_state,
)

# Name and label weigh most; member descriptions are long, so their length matters little.
NAMESPACE_PARAMS = BM25FParams(
    weights=(3.0, 0.0, 1.0, 1.0, 0.0), b=(0.3, 0.0, 0.3, 0.3, 0.0), renormalise_drift=0.2
)


def summary(namespace: str, label: str, members: Iterable[ToolDocument]) -> ToolDocument:
    """The namespace as one document: its label, member names and member descriptions."""
    members = sorted(members, key=lambda d: d.name)
    names = {namespace.removeprefix("mcp:"), label.removeprefix("mcp:")}
    return ToolDocument(
        name=namespace,
        namespace=namespace,
        label=label,
        fields={
            "name": " ".join(sorted(names)),
            "label": "",
            "description": " ".join(d.fields["description"] for d in members),
            "params": " ".join(d.fields["name"] for d in members),
            "param_docs": "",
        },
    )


def updated_spaces(
    spaces: LexicalState,
    docs: Mapping[str, IndexedDoc],
    changed: set[str],
) -> LexicalState:
    """``spaces`` with the summaries of the ``changed`` namespaces rebuilt from ``docs``."""
    if not changed:
        return spaces
    members: dict[str, list[ToolDocument]] = {ns: [] for ns in changed}
    for indexed in docs.values():
        group = members.get(indexed.doc.namespace)
        if group is not None:
            group.append(indexed.doc)
    upserts = [summary(ns, group[0].label, group) for ns, group in members.items() if group]
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
