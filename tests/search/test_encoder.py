import numpy as np
import pytest

from pegboard.search.encoder import CLS, SEP, UNK, SentenceEncoder, shared_encoder


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    """The float32 numpy path (batched); the ONNX Runtime path is tested below."""
    return SentenceEncoder(backend="numpy")


def test_sentences_with_the_same_meaning_are_close_and_unrelated_ones_are_not(
    encoder: SentenceEncoder,
) -> None:
    vectors = encoder.embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
            "can I bring my dog to the office",
            "Employees may bring a well-behaved canine to the workplace on Fridays.",
        ]
    )
    sims = vectors @ vectors.T

    assert vectors.shape == (5, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # all-MiniLM-L6-v2 in float32 (sentence-transformers) gives 0.755 for the first pair.
    assert sims[0, 1] == pytest.approx(0.755, abs=0.02)
    assert sims[0, 2] < 0.1
    assert sims[3, 4] > 0.45
    assert sims[3, 4] > max(sims[3, 0], sims[3, 1], sims[3, 2]) + 0.3


def test_a_batch_gives_each_text_the_vector_it_gets_alone(encoder: SentenceEncoder) -> None:
    texts = ["short", "a somewhat longer sentence about parking garages", "", "mid length text"]

    together = encoder.embed(texts)
    alone = np.stack([encoder.embed([t])[0] for t in texts])

    assert np.allclose(together, alone, atol=1e-5)
    assert encoder.embed_query(texts[1], lambda w: 0.0) == pytest.approx(together[1], abs=1e-6)


def test_token_states_are_one_vector_per_token_whose_mean_is_the_sentence_vector(
    encoder: SentenceEncoder,
) -> None:
    text = "A man is eating a piece of bread."

    states = encoder.token_states(text)

    assert states.shape == (len(encoder.token_ids(text)), 384)
    mean = states.mean(0)
    assert np.allclose(mean / np.linalg.norm(mean), encoder.embed([text])[0], atol=1e-6)
    # Each token has a vector of its own, not the sentence's repeated.
    assert float(np.linalg.norm(states[1] - states[2])) > 1.0


def test_texts_become_cls_word_pieces_sep_with_unknown_words_as_unk_and_a_length_cap() -> None:
    encoder = shared_encoder()
    capped = SentenceEncoder(max_tokens=6)

    assert encoder.token_ids("Hello world") == [CLS, 7592, 2088, SEP]
    assert encoder.token_ids("\u2603\u2603") == [CLS, UNK, UNK, SEP]
    assert capped.token_ids("one two three four five six seven") == [
        CLS,
        2028,
        2048,
        2093,
        2176,
        SEP,
    ]
    assert encoder.model_id.startswith("minilm-l6-384-")


@pytest.fixture(scope="module")
def fast() -> SentenceEncoder:
    return SentenceEncoder(backend="onnx")


def test_the_onnx_int8_backend_gives_the_float32_vectors_within_a_cosine_of_0_99(
    fast: SentenceEncoder, encoder: SentenceEncoder
) -> None:
    texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The girl is carrying a baby.",
        "Employees may bring a well-behaved canine to the workplace on Fridays.",
        "time.sleep(secs) Suspend execution of the calling thread for the given number of seconds.",
    ]
    exact = encoder

    int8, float32 = fast.embed(texts), exact.embed(texts)
    cosines = (int8 * float32).sum(1)

    assert (fast.backend, exact.backend) == ("onnx", "numpy")
    assert cosines.min() > 0.99
    assert not np.allclose(int8, float32, atol=1e-4)  # really another computation
    assert (int8 @ int8.T)[0, 1] == pytest.approx(0.755, abs=0.02)
    assert fast.model_id == exact.model_id  # one model: bases built either way search alike


def test_on_onnx_a_text_gets_the_same_vector_alone_or_among_others(
    fast: SentenceEncoder, encoder: SentenceEncoder
) -> None:
    texts = ["short", "a somewhat longer sentence about parking garages", "", "mid length text"]

    together = fast.embed(texts)
    alone = np.stack([fast.embed([t])[0] for t in texts])

    assert np.array_equal(together, alone)
    # a query is embedded in float32 whatever the backend (no onnxruntime on the search path)
    exact = encoder.embed(texts[1:2])[0]
    assert fast.embed_query(texts[1], lambda w: 0.0) == pytest.approx(exact, abs=1e-6)
