from importlib.metadata import distributions

from pegboard._release import release


def test_release_is_the_version_importlib_metadata_gives_for_every_installed_distribution():
    names = {dist.metadata["Name"] for dist in distributions()}
    assert {"pegboard", "mcp", "mcp-types"} <= names
    for dist in distributions():
        assert release(dist.metadata["Name"]) == dist.version, dist.metadata["Name"]


def test_release_of_a_package_not_installed_is_source():
    assert release("pegboard-no-such-distribution") == "source"
