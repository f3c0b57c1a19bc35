"""Which addresses and URLs ``web_fetch`` may reach (the SSRF policy, no I/O).

A URL chosen by a model can point at the machine itself, the local network or a cloud
metadata service. The policy is a blocklist checked on every *resolved* address (never on the
host string: glibc resolves ``0x7f.1`` and ``2130706433`` to 127.0.0.1), with an explicit
allowlist of networks (``[web_fetch] allow_networks``) that overrides it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from pegboard.errors import UrlRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_HINT = "allow it with [web_fetch] allow_networks"

# Order matters: the first match names the reason, so specific ranges precede their supernets.
_REFUSED: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/32", "the unspecified address"),
    ("0.0.0.0/8", "a 'this network' address"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.169.254/32", "a cloud metadata address"),
    ("169.254.170.2/32", "a cloud metadata address"),
    ("100.100.100.200/32", "a cloud metadata address"),
    ("169.254.0.0/16", "a link-local address"),
    ("10.0.0.0/8", "a private address"),
    ("172.16.0.0/12", "a private address"),
    ("192.168.0.0/16", "a private address"),
    ("100.64.0.0/10", "a carrier-grade NAT (CGNAT) address"),
    ("192.0.0.0/24", "an IETF protocol-assignment address"),
    ("192.0.2.0/24", "a documentation address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("198.18.0.0/15", "a benchmarking address"),
    ("224.0.0.0/4", "a multicast address"),
    ("255.255.255.255/32", "the broadcast address"),
    ("240.0.0.0/4", "a reserved address"),
    ("::/128", "the unspecified address"),
    ("::1/128", "a loopback address"),
    ("::ffff:0:0/96", "an IPv4-mapped IPv6 address"),
    ("::/96", "an IPv4-compatible IPv6 address"),
    ("64:ff9b::/96", "a NAT64 address"),
    ("64:ff9b:1::/48", "a NAT64 address"),
    ("2002::/16", "a 6to4 address"),
    ("2001::/32", "a Teredo address"),
    ("2001:db8::/32", "a documentation address"),
    ("100::/64", "a discard-only address"),
    ("fd00:ec2::254/128", "a cloud metadata address"),
    ("fc00::/7", "a private (unique local) address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
    ("ff00::/8", "a multicast address"),
)
_REFUSED_NETS: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(net), reason) for net, reason in _REFUSED
)

# Names that reach a metadata service through the platform's own resolver.
METADATA_HOSTS = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.com",
    }
)


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Refuse non-public addresses unless one of ``allow_networks`` contains them."""

    allow_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_cidrs(cls, cidrs: Iterable[str]) -> AddressPolicy:
        return cls(tuple(ipaddress.ip_network(c, strict=False) for c in cidrs))

    def refusal(self, address: str) -> str | None:
        """Why ``address`` (a resolved socket address) may not be reached, or None."""
        ip = ipaddress.ip_address(address)
        if any(ip.version == net.version and ip in net for net in self.allow_networks):
            return None
        return _classify(ip)

    def check_addresses(self, host: str, addresses: Iterable[str]) -> None:
        """Raise :class:`UrlRefused` if any resolved address of ``host`` is refused.

        Every answer is checked, not only the first: a mixed public/private answer could
        otherwise reach the private one on a retry.
        """
        for address in addresses:
            reason = self.refusal(address)
            if reason is None:
                continue
            if _is_literal(host):
                raise UrlRefused(f"{host} is {reason}; {ALLOW_HINT}")
            ip = ipaddress.ip_address(address)
            raise UrlRefused(f"{host} resolves to {ip}, {reason}; {ALLOW_HINT}")


def _classify(ip: IPAddress) -> str | None:
    for net, reason in _REFUSED_NETS:
        if ip.version == net.version and ip in net:
            return reason
    if not ip.is_global:
        return "a non-public address"
    return None


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
