"""Query-side synonym expansion from WordNet on the BM25 side, on a python3-doc store (issue 28).

    apt-get install wordnet-base        # WordNet 3.0's database files, /usr/share/wordnet
    .venv/bin/python bench/kb_wordnet.py DIR/pydoc-minilm-l6.sqlite3 [--senses 1,2]
        [--betas 0.1,0.25,0.5] [--held-out SENSES,BETA] [--notes]

Measured, not adopted (bench/RESULTS.md, session 16 (kb7)): nothing here is in the library.
Each question word (stopwords aside) is looked up in WordNet (as written, else by WordNet's
exception lists and its suffix rules: "seconds" -> "second"), and the single-word lemmas of its
first ``SENSES`` senses of every part of speech that are not question words already become the
expansion. kb_search's own ranking then runs with its lexical side changed: the FTS5 BM25 of the
question's words (scaled by the best, as today) plus ``BETA`` times the BM25 of the expansion's
words alone (scaled by its own best), over the union of both candidate lists. Dev questions
(bench/kb_pydoc/questions.tsv) by default, hit@1, hit@3 and MRR@20; ``--held-out`` scores one
setting (and the default) on both held-out sets (look once); ``--notes`` the notes set.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
from functools import cache
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_anchors import figures, ranks
from kb_quality import NOTES, PYDOC_HOLDOUT, PYDOC_HOLDOUT2, PYDOC_QUESTIONS, questions, row
from pegboard.kb import ingest
from pegboard.kb import search as kb_search
from pegboard.kb.embedding import MINILM_L6
from pegboard.search.text import STOPWORDS

WORDNET = Path("/usr/share/wordnet")
POS = ("noun", "verb", "adj", "adv")
_SUFFIXES = {
    "noun": [("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh")],
    "verb": [
        *(("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", "")),
        *(("ing", "e"), ("ing", "")),
    ],
    "adj": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "adv": [],
}


@cache
def wordnet() -> tuple[dict[str, dict[str, list[int]]], dict[str, dict[int, list[str]]],
                       dict[str, dict[str, str]]]:  # fmt: skip
    """(pos -> lemma -> synset offsets by sense frequency, pos -> offset -> lemmas, pos ->
    inflected form -> lemma) from WordNet's database files."""
    index: dict[str, dict[str, list[int]]] = {}
    synsets: dict[str, dict[int, list[str]]] = {}
    exceptions: dict[str, dict[str, str]] = {}
    for pos in POS:
        index[pos], synsets[pos], exceptions[pos] = {}, {}, {}
        for line in (WORDNET / f"index.{pos}").read_text(errors="replace").splitlines():
            if line.startswith(" "):
                continue
            parts = line.split()
            senses = int(parts[2])
            index[pos][parts[0]] = [int(o) for o in parts[-senses:]]
        for line in (WORDNET / f"data.{pos}").read_text(errors="replace").splitlines():
            if line.startswith(" "):
                continue
            parts = line.split()
            count = int(parts[3], 16)
            synsets[pos][int(parts[0])] = [parts[4 + 2 * i].lower() for i in range(count)]
        for line in (WORDNET / f"{pos}.exc").read_text().splitlines():
            form, *lemmas = line.split()
            exceptions[pos][form] = lemmas[0]
    return index, synsets, exceptions


def lemmas(word: str, pos: str) -> list[str]:
    index, _, exceptions = wordnet()
    if word in index[pos]:
        return [word]
    if exceptions[pos].get(word) in index[pos]:
        return [exceptions[pos][word]]
    found = [
        word[: -len(end)] + add
        for end, add in _SUFFIXES[pos]
        if word.endswith(end) and word[: -len(end)] + add in index[pos]
    ]
    return found[:1]


def expansion(words: list[str], senses: int) -> list[str]:
    index, synsets, _ = wordnet()
    asked = set(words)
    out: dict[str, None] = {}
    for word in words:
        for pos in POS:
            for lemma in lemmas(word, pos):
                for offset in index[pos][lemma][:senses]:
                    for name in synsets[pos][offset]:
                        name = name.split("(", 1)[0]  # adjective markers: "(a)", "(p)"
                        if "_" in name or len(name) < 3 or name in asked or name in STOPWORDS:
                            continue
                        out[name] = None
    return list(out)


class Expanded:
    """kb_search's lexical side with the expansion's BM25 added at ``beta``."""

    def __init__(self) -> None:
        self.original = kb_search._fts
        self.senses, self.beta = 0, 0.0
        kb_search._fts = self._fts  # type: ignore[assignment]

    def _fts(
        self, conn: sqlite3.Connection, bases: list[str], words: list[str]
    ) -> list[tuple[int, float]]:
        found = self.original(conn, bases, words)
        if not self.beta or not words:
            return found
        extra = self.original(conn, bases, expansion(words, self.senses))
        scores = dict(found)
        for chunk, score in extra:
            scores[chunk] = scores.get(chunk, 0.0) + self.beta * score
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a python3-doc store kept by bench/kb.py")
    parser.add_argument("--senses", default="1,2,3")
    parser.add_argument("--betas", default="0.1,0.25,0.5")
    parser.add_argument("--held-out", help="score this one setting (SENSES,BETA) on held out")
    parser.add_argument("--notes", action="store_true")
    args = parser.parse_args()
    if not WORDNET.is_dir():
        sys.exit(f"no WordNet at {WORDNET}: apt-get install wordnet-base")
    runs = [(0, 0.0)] + [
        (int(s), float(b)) for s in args.senses.split(",") for b in args.betas.split(",")
    ]
    sets = [("dev", questions(PYDOC_QUESTIONS))]
    if args.held_out is not None:
        senses, beta = args.held_out.split(",")
        runs = [(0, 0.0), (int(senses), float(beta))]
        sets += [("held out", questions(PYDOC_HOLDOUT)), ("held out 2", questions(PYDOC_HOLDOUT2))]
    print("example:", expansion(["pause", "seconds", "program"], 1))
    notes: list[Path] = []
    tmp = tempfile.TemporaryDirectory()
    if args.notes:
        notes.append(Path(tmp.name) / "notes.sqlite3")
        ingest(notes[0], "notes", [NOTES], model=MINILM_L6)
    head = ["senses", "beta"]
    head += [f"{name} {what}" for name, _ in sets for what in ("hit@1", "hit@3", "MRR@20")]
    head += ["notes hit@1", "notes hit@3"] if notes else []
    print("\n" + row(*head))
    print(row(*(["---:"] * len(head))))
    expanded = Expanded()
    for senses, beta in runs:
        expanded.senses, expanded.beta = senses, beta
        cells: list[str] = []
        for _, asked in sets:
            cells += figures(ranks(args.store, "py", asked))
        for store in notes:
            cells += figures(ranks(store, "notes", questions(NOTES / "questions.tsv")))[:2]
        print(row(senses, beta, *cells), flush=True)
    tmp.cleanup()


if __name__ == "__main__":
    main()
