"""WordLlama's tokenizer in plain Python gives the ids ``tokenizers`` gives for the same file
(``tokenizers`` comes with the semantic extra, installed by the dev extra)."""

from __future__ import annotations

import html
import json
import random
import re
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from pegboard.errors import SearchModelError
from pegboard.search.llama_bpe import LlamaBPE
from pegboard.search.wordllama import TOKENIZER, WEIGHTS, WordLlamaEmbedder, wordllama_dir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def tokenizer_file() -> Path:
    root = wordllama_dir()
    assert root is not None
    return root / TOKENIZER


@pytest.fixture(scope="module")
def reference(tokenizer_file: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def _texts() -> list[str]:
    texts = [
        "",
        " ",
        "   ",
        "search the web",
        "a  b",
        "  leading and trailing  ",
        "hello\nworld\ttabs",
        "<s>x",
        "a <s> b </s> <unk>z",
        "<s><s></s>",
        "getStockPrice get_stock_price https://example.com/a?b=c",
        "使用必应搜索指定的关键词，并返回搜索结果列表",
        "😀 émoji e\u0301 ﬁne Ωmega",
        "\u2581\u2581already marked\u2581",
        "x" * 300,
    ]
    for line in (FIXTURES / "bench" / "tools.jsonl").read_text(encoding="utf-8").splitlines():
        tool = json.loads(line)
        texts.append(" ".join(str(v) for v in tool.values() if isinstance(v, str)))
    for line in (FIXTURES / "bench" / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        texts.append(str(json.loads(line)["query"]))
    for page in sorted((FIXTURES / "pydoc" / "library").glob("*.html")):  # prose and code
        text = re.sub(r"<[^>]*>", "", page.read_text(encoding="utf-8"))
        texts += [html.unescape(line) for line in text.splitlines() if line.strip()]
    rng = random.Random(29)
    alphabet = "ab ▁é日😀<s>/\n\t  xyz-_.0ÀÖ\u0301ﬁ"
    texts += ["".join(rng.choices(alphabet, k=rng.randint(1, 30))) for _ in range(3000)]
    return texts


def test_ids_are_those_of_tokenizers_for_the_same_file(
    tokenizer_file: Path, reference: Tokenizer
) -> None:
    texts = _texts()
    mine = LlamaBPE.from_file(tokenizer_file)
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    assert [mine.encode(t) for t in texts] == expected
    bulk = mine.bulk()  # over the dict an index build takes
    assert [bulk.encode(t) for t in texts] == expected
    assert sum(map(len, expected)) > 20_000  # the texts are not trivially short


def test_the_merges_are_the_order_derived_from_the_vocabulary(tokenizer_file: Path) -> None:
    model = json.loads(tokenizer_file.read_text(encoding="utf-8"))["model"]
    vocab: dict[str, int] = model["vocab"]
    merges = [tuple(m.split(" ")) for m in model["merges"]]
    every_pair = [
        (piece[:cut], piece[cut:])
        for piece in vocab
        for cut in range(1, len(piece))
        if piece[:cut] in vocab and piece[cut:] in vocab
    ]

    def rank(pair: tuple[str, str]) -> tuple[bool, int, int]:
        merged = pair[0] + pair[1]
        return (merged.strip("\u2581") == "", vocab[merged], vocab[pair[0]])

    assert sorted(every_pair, key=rank) == merges


def test_every_piece_encodes_to_itself(tokenizer_file: Path) -> None:
    # What lets a segment that is a piece skip the merges.
    mine = LlamaBPE.from_file(tokenizer_file)
    vocab = json.loads(tokenizer_file.read_text(encoding="utf-8"))["model"]["vocab"]
    pieces = {
        piece: i
        for piece, i in vocab.items()
        if not re.fullmatch(r"<unk>|</?s>|<0x[0-9A-F]{2}>", piece)
    }
    assert len(pieces) == len(vocab) - 3 - 256
    assert all(mine.merges(piece) == (i,) for piece, i in pieces.items())


def test_a_tokenizer_of_another_kind_is_refused_in_one_line(tmp_path: Path) -> None:
    root = wordllama_dir()
    assert root is not None
    (tmp_path / WEIGHTS).parent.mkdir(parents=True)
    (tmp_path / WEIGHTS).symlink_to(root / WEIGHTS)
    spec = json.loads((root / TOKENIZER).read_text(encoding="utf-8"))
    spec["pre_tokenizer"] = {"type": "Whitespace"}
    (tmp_path / TOKENIZER).parent.mkdir(parents=True)
    (tmp_path / TOKENIZER).write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(SearchModelError) as caught:
        WordLlamaEmbedder(tmp_path)
    message = str(caught.value)
    assert "is not a LLaMA-2 SentencePiece BPE tokenizer" in message
    assert "\n" not in message
