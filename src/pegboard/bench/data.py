"""Evaluation data in the ``shared/eval`` format, and its registry of deferred entries."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pegboard.core.entry import ToolEntry, ToolSource
from pegboard.core.names import mcp_tool_name
from pegboard.core.registry import ToolRegistry
from pegboard.core.tool import Tool
from pegboard.errors import ConfigError


class ToolRecord(BaseModel):
    """One line of ``tools.jsonl``."""

    model_config = ConfigDict(extra="ignore")
    id: str
    name: str
    server: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class QueryRecord(BaseModel):
    """One line of ``queries.jsonl``; ``gold_groups`` defaults to one group per gold id."""

    model_config = ConfigDict(extra="ignore")
    id: str
    query: str
    gold: list[str]
    gold_groups: list[list[str]] = Field(default_factory=list)

    def groups(self) -> list[list[str]]:
        return self.gold_groups or [[g] for g in self.gold]


@dataclass(frozen=True)
class Dataset:
    """Queries of one file, labelled for reports by the file's folder name."""

    name: str
    queries: tuple[QueryRecord, ...]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"Cannot read {path}: {reason}. Pass an existing JSONL file.") from exc
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            message = f"{path}:{number} is not JSON ({exc.msg}); write one object a line."
            raise ConfigError(message) from exc
    return rows


def load_tools(path: Path) -> list[ToolRecord]:
    try:
        return [ToolRecord.model_validate(row) for row in _read_jsonl(path)]
    except ValidationError as exc:
        raise ConfigError(f"{path} is not a tools.jsonl file: {exc}") from exc


def evenly_spaced(items: Sequence[QueryRecord], sample: int | None) -> list[QueryRecord]:
    """``sample`` items spread over the whole sequence (the middle of each stride, no head)."""
    if sample is None or sample >= len(items):
        return list(items)
    step = len(items) / sample
    return [items[int((i + 0.5) * step)] for i in range(sample)]


def load_dataset(path: Path, sample: int | None = None) -> Dataset:
    """Queries with at least one gold id, optionally an evenly spaced sample of them."""
    try:
        records = [QueryRecord.model_validate(row) for row in _read_jsonl(path)]
    except ValidationError as exc:
        raise ConfigError(f"{path} is not a queries.jsonl file: {exc}") from exc
    labelled = [q for q in records if q.gold]
    name = path.parent.name if path.stem == "queries" else path.stem
    return Dataset(name=name, queries=tuple(evenly_spaced(labelled, sample)))


@dataclass(frozen=True)
class Catalog:
    """The pooled tools as a registry of deferred entries, and wire name -> dataset id."""

    registry: ToolRegistry
    ids: dict[str, str]

    @property
    def entries(self) -> list[ToolEntry]:
        return self.registry.snapshot().entries()


def build_catalog(tools: Iterable[ToolRecord]) -> Catalog:
    entries: list[ToolEntry] = []
    ids: dict[str, str] = {}
    for record in tools:
        wire = mcp_tool_name(record.server, record.server, record.name)
        ids[wire] = record.id
        entries.append(
            ToolEntry(
                name=wire,
                namespace=record.server,
                tool=Tool(description=record.description, input_schema=record.input_schema),
                description=record.description,
                defer="always",
                source=ToolSource(record.server, record.name),
            )
        )
    registry = ToolRegistry()
    registry.register_many(entries)
    return Catalog(registry=registry, ids=ids)
