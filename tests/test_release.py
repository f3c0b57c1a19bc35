from importlib.metadata import distributions

from pegboard._release import header_field, release


def test_release_is_the_version_importlib_metadata_gives_for_every_installed_distribution():
    names = {dist.metadata["Name"] for dist in distributions()}
    assert {"pegboard", "mcp", "mcp-types"} <= names
    for dist in distributions():
        assert release(dist.metadata["Name"]) == dist.version, dist.metadata["Name"]


def test_release_of_a_package_not_installed_is_source():
    assert release("pegboard-no-such-distribution") == "source"


def test_header_field_is_the_metadata_field_for_every_installed_distribution():
    for dist in distributions():
        assert header_field(dist, "Name") == dist.metadata["Name"], dist.metadata["Name"]
        assert header_field(dist, "Version") == dist.version, dist.metadata["Name"]
    assert header_field(next(iter(distributions())), "No-Such-Field") is None
