from pegboard.core.redact import mask


def test_every_occurrence_of_each_secret_is_masked_longest_first() -> None:
    text = "token abcd1234 and abcd1234xyz and abcd"
    assert mask(text, ["abcd1234", "abcd1234xyz"]) == "token **** and **** and abcd"


def test_values_too_short_to_be_secrets_are_left_alone() -> None:
    assert mask("port 1 on", ["1", "on", ""]) == "port 1 on"
