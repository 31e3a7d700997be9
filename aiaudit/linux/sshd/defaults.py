"""Compiled-in algorithm lists of sshd, by OpenSSH release.

What ``sshd -T`` prints for ``Ciphers``, ``MACs``, ``KexAlgorithms`` and
``HostKeyAlgorithms`` when no line sets them: ``KEX_SERVER_ENCRYPT``, ``KEX_SERVER_MAC``,
``KEX_SERVER_KEX`` and ``KEX_DEFAULT_PK_ALG`` of openssh-portable ``myproposal.h``
(``servconf.c assemble_algorithms`` filters them by what the build supports; Debian, Ubuntu
and RHEL build with OpenSSL, ECC, GCM and built-in security keys, so nothing is removed).
Generated from the ``V_8_0_P1`` .. ``V_10_5_P1`` tags with the C preprocessor; a row is
listed at the first release whose lists differ from the previous one.  Checked against the
installed ``sshd -T`` in ``tests/linux/sshd/test_config_exact.py``.

Releases the distributions ship: Debian 11 8.4p1, 12 9.2p1, 13 10.0p1; Ubuntu 20.04 8.2p1,
22.04 8.9p1, 24.04 9.6p1; RHEL 8 8.0p1, 9 8.7p1, 10 9.9p1 (RHEL overrides these lists
through crypto-policies: an ``Include`` of ``/etc/crypto-policies/back-ends/opensshserver.config``
in RHEL 9's ``50-redhat.conf``, parsed like any other line; RHEL 8 passes them on sshd's
command line, which is not modelled).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Mapping

from aiaudit.core.startup import lazy_pattern

if TYPE_CHECKING:
    from aiaudit.core.host import Host

OPTIONS = ("ciphers", "macs", "kexalgorithms", "hostkeyalgorithms")
"""The options these lists are the defaults of (lower case)."""

CIPHERS_8_0 = (
    "chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr,"
    "aes128-gcm@openssh.com,aes256-gcm@openssh.com")
MACS_8_0 = (
    "umac-64-etm@openssh.com,umac-128-etm@openssh.com,hmac-sha2-256-etm@openssh.com,"
    "hmac-sha2-512-etm@openssh.com,hmac-sha1-etm@openssh.com,umac-64@openssh.com,"
    "umac-128@openssh.com,hmac-sha2-256,hmac-sha2-512,hmac-sha1")
KEX_8_0 = (
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,"
    "ecdh-sha2-nistp384,ecdh-sha2-nistp521,diffie-hellman-group-exchange-sha256,"
    "diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,"
    "diffie-hellman-group14-sha256,diffie-hellman-group14-sha1")
HOSTKEY_8_0 = (
    "ecdsa-sha2-nistp256-cert-v01@openssh.com,ecdsa-sha2-nistp384-cert-v01@openssh.com,"
    "ecdsa-sha2-nistp521-cert-v01@openssh.com,ssh-ed25519-cert-v01@openssh.com,"
    "rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-256-cert-v01@openssh.com,"
    "ssh-rsa-cert-v01@openssh.com,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,"
    "ecdsa-sha2-nistp521,ssh-ed25519,rsa-sha2-512,rsa-sha2-256,ssh-rsa")
KEX_8_2 = (
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,"
    "ecdh-sha2-nistp384,ecdh-sha2-nistp521,diffie-hellman-group-exchange-sha256,"
    "diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,"
    "diffie-hellman-group14-sha256")
HOSTKEY_8_2 = (
    "ecdsa-sha2-nistp256-cert-v01@openssh.com,ecdsa-sha2-nistp384-cert-v01@openssh.com,"
    "ecdsa-sha2-nistp521-cert-v01@openssh.com,"
    "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com,ssh-ed25519-cert-v01@openssh.com,"
    "sk-ssh-ed25519-cert-v01@openssh.com,rsa-sha2-512-cert-v01@openssh.com,"
    "rsa-sha2-256-cert-v01@openssh.com,ssh-rsa-cert-v01@openssh.com,ecdsa-sha2-nistp256,"
    "ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,sk-ecdsa-sha2-nistp256@openssh.com,"
    "ssh-ed25519,sk-ssh-ed25519@openssh.com,rsa-sha2-512,rsa-sha2-256,ssh-rsa")
HOSTKEY_8_5 = (
    "ssh-ed25519-cert-v01@openssh.com,ecdsa-sha2-nistp256-cert-v01@openssh.com,"
    "ecdsa-sha2-nistp384-cert-v01@openssh.com,ecdsa-sha2-nistp521-cert-v01@openssh.com,"
    "sk-ssh-ed25519-cert-v01@openssh.com,sk-ecdsa-sha2-nistp256-cert-v01@openssh.com,"
    "rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-256-cert-v01@openssh.com,"
    "ssh-rsa-cert-v01@openssh.com,ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,"
    "ecdsa-sha2-nistp521,sk-ssh-ed25519@openssh.com,sk-ecdsa-sha2-nistp256@openssh.com,"
    "rsa-sha2-512,rsa-sha2-256,ssh-rsa")
HOSTKEY_8_8 = (
    "ssh-ed25519-cert-v01@openssh.com,ecdsa-sha2-nistp256-cert-v01@openssh.com,"
    "ecdsa-sha2-nistp384-cert-v01@openssh.com,ecdsa-sha2-nistp521-cert-v01@openssh.com,"
    "sk-ssh-ed25519-cert-v01@openssh.com,sk-ecdsa-sha2-nistp256-cert-v01@openssh.com,"
    "rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-256-cert-v01@openssh.com,ssh-ed25519,"
    "ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,"
    "sk-ssh-ed25519@openssh.com,sk-ecdsa-sha2-nistp256@openssh.com,rsa-sha2-512,"
    "rsa-sha2-256")
KEX_8_9 = (
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,"
    "ecdh-sha2-nistp384,ecdh-sha2-nistp521,sntrup761x25519-sha512@openssh.com,"
    "diffie-hellman-group-exchange-sha256,diffie-hellman-group16-sha512,"
    "diffie-hellman-group18-sha512,diffie-hellman-group14-sha256")
KEX_9_0 = (
    "sntrup761x25519-sha512@openssh.com,curve25519-sha256,curve25519-sha256@libssh.org,"
    "ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,"
    "diffie-hellman-group-exchange-sha256,diffie-hellman-group16-sha512,"
    "diffie-hellman-group18-sha512,diffie-hellman-group14-sha256")
KEX_9_9 = (
    "sntrup761x25519-sha512,sntrup761x25519-sha512@openssh.com,mlkem768x25519-sha256,"
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,"
    "ecdh-sha2-nistp384,ecdh-sha2-nistp521,diffie-hellman-group-exchange-sha256,"
    "diffie-hellman-group16-sha512,diffie-hellman-group18-sha512,"
    "diffie-hellman-group14-sha256")
CIPHERS_10_0 = (
    "chacha20-poly1305@openssh.com,aes128-gcm@openssh.com,aes256-gcm@openssh.com,"
    "aes128-ctr,aes192-ctr,aes256-ctr")
KEX_10_0 = (
    "mlkem768x25519-sha256,sntrup761x25519-sha512,sntrup761x25519-sha512@openssh.com,"
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,"
    "ecdh-sha2-nistp384,ecdh-sha2-nistp521")
HOSTKEY_10_3 = (
    "ssh-ed25519-cert-v01@openssh.com,ecdsa-sha2-nistp256-cert-v01@openssh.com,"
    "ecdsa-sha2-nistp384-cert-v01@openssh.com,ecdsa-sha2-nistp521-cert-v01@openssh.com,"
    "sk-ssh-ed25519-cert-v01@openssh.com,sk-ecdsa-sha2-nistp256-cert-v01@openssh.com,"
    "webauthn-sk-ecdsa-sha2-nistp256-cert-v01@openssh.com,"
    "rsa-sha2-512-cert-v01@openssh.com,rsa-sha2-256-cert-v01@openssh.com,ssh-ed25519,"
    "ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,"
    "sk-ssh-ed25519@openssh.com,sk-ecdsa-sha2-nistp256@openssh.com,"
    "webauthn-sk-ecdsa-sha2-nistp256@openssh.com,rsa-sha2-512,rsa-sha2-256")

TABLE: tuple[tuple[tuple[int, int], tuple[str, str, str, str]], ...] = (
    ((8, 0), (CIPHERS_8_0, MACS_8_0, KEX_8_0, HOSTKEY_8_0)),
    ((8, 2), (CIPHERS_8_0, MACS_8_0, KEX_8_2, HOSTKEY_8_2)),
    ((8, 5), (CIPHERS_8_0, MACS_8_0, KEX_8_2, HOSTKEY_8_5)),
    ((8, 8), (CIPHERS_8_0, MACS_8_0, KEX_8_2, HOSTKEY_8_8)),
    ((8, 9), (CIPHERS_8_0, MACS_8_0, KEX_8_9, HOSTKEY_8_8)),
    ((9, 0), (CIPHERS_8_0, MACS_8_0, KEX_9_0, HOSTKEY_8_8)),
    ((9, 9), (CIPHERS_8_0, MACS_8_0, KEX_9_9, HOSTKEY_8_8)),
    ((10, 0), (CIPHERS_10_0, MACS_8_0, KEX_10_0, HOSTKEY_8_8)),
    ((10, 3), (CIPHERS_10_0, MACS_8_0, KEX_10_0, HOSTKEY_10_3)),
)
"""(first release, (Ciphers, MACs, KexAlgorithms, HostKeyAlgorithms)) in release order."""


def defaults(version: tuple[int, ...] | None) -> tuple[Mapping[str, str], str]:
    """The compiled-in lists for an OpenSSH release (``(9, 2)``), and how it was chosen:
    the last row at or before the release; ``None`` or an older release than the table
    takes the Debian 12 release (9.2) and says so."""
    if version:
        rows = [r for r in TABLE if r[0] <= tuple(version[:2])]
        if rows:
            _first, vals = rows[-1]
            return dict(zip(OPTIONS, vals, strict=True)), (
                f"compiled-in default of OpenSSH {version[0]}.{version[1]}")
    vals = next(v for r, v in reversed(TABLE) if r <= (9, 2))
    why = ("OpenSSH version unknown" if not version
           else f"OpenSSH {'.'.join(map(str, version[:2]))} predates the table")
    return dict(zip(OPTIONS, vals, strict=True)), (
        f"compiled-in default of OpenSSH 9.2 ({why}, assumed 9.2)")



DEBIAN_12_SNTRUP = re.compile(r"(?:1:)?9\.2p1-2\+deb12u(\d+)")
"""Debian 1:9.2p1-2+deb12u4 (changelog, #1088873) makes ``sntrup761x25519-sha512``
available without the ``@openssh.com`` suffix, first in the default ``KexAlgorithms``
(as upstream 9.9 does); the installed deb12u10 prints it so."""


def release(full: str | None) -> tuple[tuple[int, int] | None, str]:
    """((major, minor), ``OpenSSH_10.0p1``) of an ``openssh-server`` package version
    (``1:10.0p1-7+deb13u4``); ``(None, "")`` when unknown."""
    from aiaudit.linux.packages import dpkg

    if not full:
        return None, ""
    up = dpkg.upstream_version(full)
    vt = dpkg.version_tuple(up)
    if len(vt) < 2:
        return None, ""
    rev = full.rsplit("-", 1)[1] if "-" in full else ""
    return (vt[0], vt[1]), f"OpenSSH_{up}" + (f" Debian-{rev}" if rev else "")


SSHD_BINARY = "/usr/sbin/sshd"
_RELEASE_IN_BINARY = lazy_pattern(rb"OpenSSH_\d+\.\d+p\d+(?: [\x21-\x7e]+)?(?=\x00)")


def release_in_binary(host: Host) -> str:
    """``SSH_RELEASE`` as the sshd binary of the root holds it (``OpenSSH_10.0p2
    Debian-7+deb13u4``: Debian's 1:10.0p1 package builds upstream 10.0p2, which its
    version does not say), read as data, never run; ``""`` when it cannot be read."""
    from aiaudit.core.errors import HostError

    try:
        data = host.read_bytes(SSHD_BINARY)
    except HostError:
        return ""
    m = _RELEASE_IN_BINARY().search(data)
    return m.group(0).decode("ascii") if m else ""


CA_SIGALGS_8_0 = ("ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,ssh-ed25519,"
                  "rsa-sha2-512,rsa-sha2-256,ssh-rsa")
CA_SIGALGS_8_2 = ("ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,"
                  "sk-ecdsa-sha2-nistp256@openssh.com,ssh-ed25519,sk-ssh-ed25519@openssh.com,"
                  "rsa-sha2-512,rsa-sha2-256")
CA_SIGALGS_8_5 = ("ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384,ecdsa-sha2-nistp521,"
                  "sk-ssh-ed25519@openssh.com,sk-ecdsa-sha2-nistp256@openssh.com,"
                  "rsa-sha2-512,rsa-sha2-256")
"""``SSH_ALLOWED_CA_SIGALGS`` of ``myproposal.h`` (``CASignatureAlgorithms``), by the first
release with that list; the 8.5 form is what the installed 9.2 and Debian 13's 10.0 print."""
GSSAPI_KEX = ("gss-group14-sha256-,gss-group16-sha512-,gss-nistp256-sha256-,"
              "gss-curve25519-sha256-,gss-group14-sha1-,gss-gex-sha1-")
"""``GSSAPIKexAlgorithms`` of Debian's GSSAPI patch (Debian 12's 9.2 and 13's 10.0 print
it; the option exists only in builds carrying the patch, and the release comes from a
dpkg package)."""


def other_defaults(version: tuple[int, ...] | None) -> dict[str, str]:
    """The other compiled-in values ``sshd -T`` prints when nothing sets them and that
    depend on the release: the accepted-algorithm lists (``KEX_DEFAULT_PK_ALG``, as
    ``HostKeyAlgorithms``; so ``PubkeyAcceptedAlgorithms`` lacks ``ssh-rsa`` from 8.8),
    ``CASignatureAlgorithms``, Debian's ``GSSAPIKexAlgorithms``, ``IPQoS`` (Debian keeps
    ``lowdelay throughput`` before 10.0, where ``sshd -T`` prints ``ef cs1``) and
    ``ChannelTimeout`` (printed as ``none`` from 10.0; unset before).  ``None``: as 9.2.
    Checked line by line against the installed 9.2 and Debian 13's 10.0 in
    ``tests/linux/sshd/test_view_oracle.py``."""
    vt = tuple(version[:2]) if version else (9, 2)
    hostkey = dict(defaults(version)[0])["hostkeyalgorithms"]
    ca = CA_SIGALGS_8_5 if vt >= (8, 5) else CA_SIGALGS_8_2 if vt >= (8, 2) \
        else CA_SIGALGS_8_0
    out = {"pubkeyacceptedalgorithms": hostkey, "hostbasedacceptedalgorithms": hostkey,
           "casignaturealgorithms": ca, "gssapikexalgorithms": GSSAPI_KEX,
           "ipqos": "ef cs1" if vt >= (10, 0) else "lowdelay throughput"}
    if vt >= (10, 0):
        out["channeltimeout"] = "none"
    return out


def for_package(full: str | None) -> tuple[dict[str, str], str]:
    """:func:`defaults` for an ``openssh-server`` package version (``1:9.2p1-2+deb12u10``),
    with the distribution patches that change the lists, and :func:`other_defaults`."""
    from aiaudit.linux.packages import dpkg

    vt = dpkg.version_tuple(dpkg.upstream_version(full)) if full else None
    out, why = defaults(vt)
    out = {**out, **other_defaults(vt if vt and tuple(vt[:2]) >= TABLE[0][0] else None)}
    m = DEBIAN_12_SNTRUP.fullmatch(full or "")
    if m and int(m.group(1)) >= 4:
        out["kexalgorithms"] = "sntrup761x25519-sha512," + out["kexalgorithms"]
        why = f"compiled-in default of openssh-server {full}"
    return out, why
