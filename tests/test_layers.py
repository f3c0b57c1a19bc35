"""The layers contract (``.importlinter``) covers every package and matches the README."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "pegboard"


def _layers() -> list[set[str]]:
    """The contract's layers, bottom first; siblings (``a | b``) share a set."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    lines = config["importlinter:contract:layers"]["layers"].split("\n")
    layers = [{name.strip() for name in re.split(r"[|:]", line)} for line in lines if line.strip()]
    return list(reversed(layers))


def _readme_order() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"`([a-z_]+)(?:/|\.py)`", paragraph)]


def test_every_package_and_module_of_pegboard_is_in_a_layer() -> None:
    named = set().union(*_layers())
    found = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    found |= {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    assert found == named


def test_the_readme_names_the_layers_bottom_up_in_the_contracts_order() -> None:
    rank = {name: i for i, layer in enumerate(_layers()) for name in layer}
    order = [name for name in dict.fromkeys(_readme_order()) if name in rank]
    assert set(order) == set(rank)
    ranks = [rank[name] for name in order]
    assert ranks == sorted(ranks), order
