"""Issue 17 corners of the sshd model, each against the real ``sshd -t`` / ``sshd -T``:
ListenAddress validation, values in ``sshd -T`` form, relative paths, release defaults of
the algorithm lists, ``Match`` blocks that can never match, per-connection values."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sshd import defaults as sshd_defaults
from tests.linux.sshd.sshd_corpus import SSHD, require_sshd

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def hostkey(tmp_path_factory: pytest.TempPathFactory) -> str:
    require_sshd()
    key = tmp_path_factory.mktemp("hk") / "hk"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    return str(key)


def _sshd(text: str, tmp: Path, hostkey: str, *extra: str) -> subprocess.CompletedProcess:
    conf = tmp / "sshd_config"
    conf.write_text(text)
    # cwd "/" as the service runs: relative paths are prefixed with it
    return subprocess.run([SSHD, *extra, "-f", str(conf), "-h", hostkey], cwd="/",
                          capture_output=True, text=True, timeout=20)


def _ours(text: str, path: str) -> sp.SshdConfig:
    return sp.parse_text(text, path)


LISTEN = [
    "ListenAddress 10.0.0.5",
    "ListenAddress 10.0.0.5:2222",
    "ListenAddress [::1]:2222",
    "ListenAddress [::1]",
    "ListenAddress fe80::1",
    "ListenAddress 10.1",
    "ListenAddress [10.0.0.5]:22",
    "ListenAddress 10.0.0.5:ssh",
    "ListenAddress 0.0.0.0\nPort 22\nPort 2200",
    "ListenAddress 10.0.0.5:0",
    "ListenAddress 10.0.0.5:65536",
    "ListenAddress 10.0.0.5:abc",
    "ListenAddress 10.0.0.5/24",
    "ListenAddress [::1",
    "ListenAddress [::1]x",
    "ListenAddress 10.0.0.5:22 rdomain",
    "ListenAddress 10.0.0.5:22 foo bar",
    "ListenAddress 10.0.0.5:22 rdomain a/b",
    "ListenAddress 10.0.0.5:22:33",
    "ListenAddress 300.1.1.1",
    "AddressFamily inet6\nListenAddress 10.0.0.5",
    "ListenAddress 10.0.0.5\nAddressFamily inet6",
    "ListenAddress ::1\nAddressFamily inet",
    "AddressFamily inet\nListenAddress 127.0.0.1",
]


@pytest.mark.parametrize("text", LISTEN)
def test_listen_address_as_sshd_decides(text: str, tmp_path: Path, hostkey: str) -> None:
    """Refused exactly when sshd -t refuses, with sshd's message (and our file:line);
    accepted lines print as sshd -T prints them."""
    real = _sshd(text + "\n", tmp_path, hostkey, "-T")
    path = str(tmp_path / "sshd_config")
    try:
        cfg = _ours(text + "\n", path)
    except ParseError as exc:
        assert real.returncode != 0, real.stdout
        msg = real.stderr.strip().splitlines()[-1]
        ours = str(exc).split(f"{path}:{exc.line}: ", 1)[1]
        assert msg.endswith(ours), (msg, str(exc))
        assert exc.line is not None
        return
    assert real.returncode == 0, real.stderr
    printed = [ln.split(" ", 1)[1] for ln in real.stdout.splitlines()
               if ln.startswith("listenaddress ")]
    ports = cfg.value("Port").items
    assert cfg.value("ListenAddress").printed(ports) == printed


PRINTED = [
    ("PermitRootLogin prohibit-password", "permitrootlogin"),
    ("PermitRootLogin without-password", "permitrootlogin"),
    ("LogLevel QUIET", "loglevel"),
    ("LogLevel DEBUG1", "loglevel"),
    ("LoginGraceTime 2m", "logingracetime"),
    ("Compression delayed", "compression"),
    ("Banner etc/issue", "banner"),
    ("Banner NONE", "banner"),
    ("PidFile run/x.pid", "pidfile"),
    ("ModuliFile moduli", "modulifile"),
    ("XAuthLocation xauth", "xauthlocation"),
    ("TrustedUserCAKeys ca.pub", "trustedusercakeys"),
    ("RevokedKeys revoked", "revokedkeys"),
    ("ChrootDirectory x", "chrootdirectory"),
    ('AllowUsers "a b" c\nAllowUsers d', "allowusers"),
    ("DenyGroups g1 g2", "denygroups"),
    ("", "ciphers"),
    ("", "macs"),
    ("", "kexalgorithms"),
    ("", "hostkeyalgorithms"),
    # relative to the compiled-in list (kex_assemble_names)
    ("Ciphers +aes128-cbc", "ciphers"),
    ("Ciphers +aes128-ctr,aes256-cbc", "ciphers"),
    ("Ciphers ^aes256-gcm@openssh.com", "ciphers"),
    ("Ciphers -chacha20*,aes128-ctr", "ciphers"),
    ("MACs -hmac-sha1*,umac-64*", "macs"),
    ("MACs ^hmac-sha2-512", "macs"),
    ("KexAlgorithms -*sha1,ecdh-*", "kexalgorithms"),
    ("KexAlgorithms +diffie-hellman-group14-sha1", "kexalgorithms"),
    ("HostKeyAlgorithms -ssh-rsa*", "hostkeyalgorithms"),
    ("HostKeyAlgorithms ^ssh-ed25519", "hostkeyalgorithms"),
]


def _installed_defaults() -> tuple[dict[str, str], str]:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "openssh-server"],
                         capture_output=True, text=True).stdout
    return sshd_defaults.for_package(out.strip())


@pytest.mark.parametrize("text,key", PRINTED)
def test_values_in_sshd_T_form(text: str, key: str, tmp_path: Path, hostkey: str) -> None:
    real = _sshd(text + "\n", tmp_path, hostkey, "-T")
    assert real.returncode == 0, real.stderr
    want = [ln.split(" ", 1)[1] for ln in real.stdout.splitlines()
            if ln.split(" ", 1)[0] == key]
    defaults, _ = _installed_defaults()
    cfg = sp.load(lambda p: text + "\n", lambda _p: (), str(tmp_path / "sshd_config"),
                  defaults=defaults)
    s = cfg.value(key)
    got = s.printed()
    if key in ("allowusers", "denygroups"):
        assert got == want  # one printed line per entry: "a b" stays one entry
        assert s.as_json()["value"] == want
    else:
        assert got == want, (got, want)


def test_relative_banner_satisfies_absolute_rule() -> None:
    s = sp.parse_text("Banner etc/issue\n").value("Banner")
    assert s.value == "/etc/issue" and s.printed() == ["//etc/issue"]


def test_release_table_covers_distribution_releases() -> None:
    for ver in ((8, 0), (8, 2), (8, 4), (8, 7), (8, 9), (9, 2), (9, 6), (9, 9), (10, 0)):
        d, why = sshd_defaults.defaults(ver)
        assert set(d) == set(sshd_defaults.OPTIONS) and f"{ver[0]}.{ver[1]}" in why
    assert "ssh-rsa" in sshd_defaults.defaults((8, 7))[0]["hostkeyalgorithms"].split(",")
    assert "ssh-rsa" not in sshd_defaults.defaults((8, 8))[0]["hostkeyalgorithms"].split(",")
    assert sshd_defaults.defaults((10, 0))[0]["kexalgorithms"].startswith("mlkem768x25519")
    assert "assumed 9.2" in sshd_defaults.defaults(None)[1]
    kex = sshd_defaults.for_package("1:9.2p1-2+deb12u3")[0]["kexalgorithms"]
    assert kex.startswith("sntrup761x25519-sha512@openssh.com,")
    kex = sshd_defaults.for_package("1:9.2p1-2+deb12u4")[0]["kexalgorithms"]
    assert kex.startswith("sntrup761x25519-sha512,sntrup761x25519-sha512@openssh.com,")


@pytest.mark.parametrize("crit,conn", [
    ("User !root", "user=alice,host=h,addr=10.1.2.3"),
    ("User !root,!bob", "user=alice,host=h,addr=10.1.2.3"),
    ("Address !10.0.0.0/8", "user=alice,host=h,addr=192.168.1.1"),
    ("User !root,*", "user=alice,host=h,addr=10.1.2.3"),
])
def test_negation_only_match_never_applies(crit: str, conn: str, tmp_path: Path,
                                           hostkey: str) -> None:
    text = f"PasswordAuthentication no\nMatch {crit}\n  PasswordAuthentication yes\n"
    real = _sshd(text, tmp_path, hostkey, "-T", "-C", conn)
    applied = "passwordauthentication yes" in real.stdout
    cfg = sp.parse_text(text)
    (blk,) = cfg.blocks
    assert blk.can_match is applied  # the negation-only lists match nobody
    kv = dict(p.split("=", 1) for p in conn.split(","))
    c = sp.Connection(user=kv["user"], groups=(), host=kv["host"], addr=kv["addr"])
    assert (cfg.value("PasswordAuthentication", c).value == "yes") is applied


# ------------------------------------------------------------------ through ssh.sshd_option
def _check(make_root, text: str, params: dict):
    from tests.helpers import run_check

    root = make_root({"/etc/ssh/sshd_config": text, "/usr/sbin/sshd": ""})
    return run_check("ssh.sshd_option", root, params)


def test_check_no_finding_for_a_block_that_matches_nobody(make_root) -> None:
    text = "PasswordAuthentication no\nMatch User !root\n  PasswordAuthentication yes\n"
    results = _check(make_root, text, {"keyword": "PasswordAuthentication", "op": "eq",
                                       "value": "no"})
    assert [r.subject for r in results] == ["PasswordAuthentication"]
    assert results[0].status.value == "pass"


def test_check_relative_banner_and_json_lists(make_root) -> None:
    (r,) = _check(make_root, "Banner etc/issue\n",
                  {"keyword": "Banner", "op": "eq", "value": "/etc/issue"})
    assert r.status.value == "pass", r.message
    assert r.data["sshd_T"] == ["//etc/issue"]
    (r,) = _check(make_root, 'AllowUsers "a b" c\n',
                  {"keyword": "AllowUsers", "op": "ne", "value": "x"})
    assert r.data["value"] == ["a b", "c"] and r.data["sshd_T"] == ["a b", "c"]


def test_check_unset_ciphers_show_the_release_default(make_root) -> None:
    from tests.helpers import run_check

    dpkg = ("Package: openssh-server\nStatus: install ok installed\n"
            "Version: 1:8.4p1-5+deb11u3\n\n")
    root = make_root({"/etc/ssh/sshd_config": "UsePAM yes\n", "/usr/sbin/sshd": "",
                      "/var/lib/dpkg/status": dpkg})
    (r,) = run_check("ssh.sshd_option", root, {"keyword": "Ciphers", "op": "ne",
                                                "value": "aes256-gcm@openssh.com"})
    assert r.actual == sshd_defaults.defaults((8, 4))[0]["ciphers"], r.actual
    assert "OpenSSH 8.4" in r.evidence[0].source + (r.evidence[0].value or "") + \
        r.data.get("default", "")


@pytest.mark.parametrize("dev", ["lo", "no-such-dev0"])
def test_rdomain_must_be_a_device_of_the_host(dev: str, tmp_path: Path, hostkey: str) -> None:
    """sshd asks the kernel whether NAME is a device (SO_BINDTODEVICE); live, the parser is
    told through ``netdev`` (the check looks in /sys/class/net)."""
    import os

    text = f"ListenAddress 127.0.0.1 rdomain {dev}\n"
    real = _sshd(text, tmp_path, hostkey, "-t")
    exists = os.path.exists(f"/sys/class/net/{dev}")
    path = str(tmp_path / "sshd_config")
    try:
        sp.load(lambda p: text, lambda _p: (), path,
                netdev=lambda n: os.path.exists(f"/sys/class/net/{n}"))
        refused = None
    except ParseError as exc:
        refused = str(exc)
    assert (real.returncode == 0) is exists is (refused is None), (real.stderr, refused)
    if refused:
        assert real.stderr.strip().endswith("bad routing domain")
        assert refused.endswith(":1: bad routing domain")
