"""web_fetch refuses hostile URLs before any socket opens (security.md section 1)."""

from __future__ import annotations

import pytest

from pegboard.builtin.web_fetch import web_fetch
from pegboard.config.model import PegboardConfig, WebFetchConfig
from pegboard.errors import ToolExecutionError, UrlRefused
from tests.builtin.conftest import NetLog

pytestmark = pytest.mark.anyio

# (url, a fragment the refusal must contain)
HOSTILE = [
    # other schemes and no scheme
    ("file:///etc/passwd", "only http and https URLs can be fetched, not file:"),
    ("gopher://127.0.0.1:70/_GET", "not gopher:"),
    ("ftp://example.com/file", "not ftp:"),
    ("data:text/plain,hello", "not data:"),
    ("dict://127.0.0.1:11211/stat", "not dict:"),
    ("javascript:alert(1)", "not javascript:"),
    ("example.com/page", "not no scheme"),
    # userinfo tricks
    ("http://user:pw@example.com@127.0.0.1/", "user name or password"),
    ("http://user@example.com/", "user name or password"),
    ("https://attacker:x@169.254.169.254/", "user name or password"),
    # loopback, in every spelling glibc accepts
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://127.255.255.254:8080/", "a loopback address"),
    ("http://127.1/", "127.1 resolves to 127.0.0.1, a loopback address"),
    ("http://2130706433/", "2130706433 resolves to 127.0.0.1, a loopback address"),
    ("http://0x7f.1/", "0x7f.1 resolves to 127.0.0.1, a loopback address"),
    ("http://0x7f000001/", "resolves to 127.0.0.1, a loopback address"),
    ("http://017700000001/", "resolves to 127.0.0.1, a loopback address"),
    ("http://localhost/", "localhost resolves to 127.0.0.1, a loopback address"),
    ("http://LOCALHOST./", "resolves to 127.0.0.1, a loopback address"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]/", "an IPv4-mapped IPv6 address"),
    ("http://[::ffff:7f00:1]/", "an IPv4-mapped IPv6 address"),
    ("http://[::ffff:a9fe:a9fe]/", "an IPv4-mapped IPv6 address"),
    ("http://[::127.0.0.1]/", "an IPv4-compatible IPv6 address"),
    # unspecified
    ("http://0.0.0.0/", "0.0.0.0 is the unspecified address"),
    ("http://0/", "0 resolves to 0.0.0.0, the unspecified address"),
    ("http://0.0.0.0:22/", "the unspecified address"),
    ("http://[::]/", ":: is the unspecified address"),
    # cloud metadata
    ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
    ("http://0251.0376.0251.0376/", "is not a valid URL: Invalid IPv4 address"),
    ("http://0xa9.0xfe.0xa9.0xfe/", "resolves to 169.254.169.254, a cloud metadata address"),
    ("http://169.254.170.2/v2/credentials", "a cloud metadata address"),
    ("http://100.100.100.200/latest/meta-data/", "a cloud metadata address"),
    ("http://[fd00:ec2::254]/latest/", "a cloud metadata address"),
    ("http://metadata.google.internal/computeMetadata/v1/", "a cloud metadata host"),
    ("http://metadata.google.internal./computeMetadata/v1/", "a cloud metadata host"),
    # private, shared and special ranges
    ("http://10.0.0.1/", "a private address"),
    ("http://172.16.0.1/", "a private address"),
    ("http://172.31.255.255/", "a private address"),
    ("http://192.168.1.1/admin", "a private address"),
    ("http://100.64.0.1/", "a carrier-grade NAT (CGNAT) address"),
    ("http://169.254.1.1/", "a link-local address"),
    ("http://224.0.0.1/", "a multicast address"),
    ("http://255.255.255.255/", "the broadcast address"),
    ("http://240.0.0.1/", "a reserved address"),
    ("http://192.0.2.1/", "a documentation address"),
    ("http://[fe80::1]/", "a link-local address"),
    ("http://[fd12:3456::1]/", "a private (unique local) address"),
    ("http://[ff02::1]/", "a multicast address"),
    ("http://[64:ff9b::a9fe:a9fe]/", "a NAT64 address"),
    ("http://[2002:7f00:1::]/", "a 6to4 address"),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "a Teredo address"),
    # names whose answers are private
    ("http://kubernetes.default.svc.cluster.local/", "resolves to 10.96.0.1, a private address"),
    ("http://mixed.example/", "mixed.example resolves to 10.0.0.7, a private address"),
]


@pytest.mark.parametrize(("url", "reason"), HOSTILE)
async def test_hostile_url_is_refused_before_any_socket_opens(
    url: str, reason: str, net: NetLog
) -> None:
    net.dns["kubernetes.default.svc.cluster.local"] = ["10.96.0.1"]
    net.dns["mixed.example"] = ["93.184.216.34", "10.0.0.7"]  # public first, then private
    with pytest.raises(UrlRefused) as caught:
        await web_fetch(url)
    assert reason in str(caught.value)
    assert net.connects == []


async def test_an_address_refusal_names_the_setting_that_allows_it() -> None:
    with pytest.raises(UrlRefused) as caught:
        await web_fetch("http://localhost:8080/")
    assert str(caught.value) == (
        "localhost resolves to 127.0.0.1, a loopback address; "
        "allow it with [web_fetch] allow_networks"
    )


async def test_a_host_that_does_not_resolve_is_an_error_without_a_connect(net: NetLog) -> None:
    with pytest.raises(ToolExecutionError, match=r"could not resolve %31%32%37\.0\.0\.1"):
        await web_fetch("http://%31%32%37.0.0.1/")
    assert net.connects == []


async def test_allowing_loopback_does_not_allow_the_metadata_service(net: NetLog) -> None:
    config = WebFetchConfig(allow_networks=["127.0.0.0/8"])
    with pytest.raises(UrlRefused, match="a cloud metadata address"):
        await web_fetch("http://169.254.169.254/", config=config)
    assert net.connects == []


def test_the_default_allows_no_network() -> None:
    assert WebFetchConfig().allow_networks == []
    assert PegboardConfig().web_fetch.allow_networks == []


def test_allow_networks_must_be_cidrs() -> None:
    with pytest.raises(ValueError, match="'intranet' is not a network; write a CIDR"):
        WebFetchConfig(allow_networks=["intranet"])


async def test_an_allowed_ipv4_network_does_not_allow_its_ipv6_mapped_spelling(
    net: NetLog,
) -> None:
    config = WebFetchConfig(allow_networks=["127.0.0.1/32"])
    with pytest.raises(UrlRefused, match=r"::ffff:127\.0\.0\.1 is an IPv4-mapped IPv6 address"):
        await web_fetch("http://[::ffff:127.0.0.1]/", config=config)
    assert net.connects == []
