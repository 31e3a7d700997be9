"""Seeded generator of sshd configurations for the oracle tests (SEMANTICS §2.7 cases).

A case is a set of files under a base directory: the main config ``sshd_config``, drop-ins
``sshd_config.d/NN-x.conf`` and extra include files, plus the connections to ask for.
Absolute ``Include`` paths point into the base directory; "relative" includes climb out of
``/etc/ssh`` (``../../<base>/...``) so the real sshd resolves them against ``/etc/ssh`` too.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

import pytest

SSHD = "/usr/sbin/sshd"


def require_sshd() -> None:
    """Skip (fail under CI) unless the real sshd can run ``-T`` here: installed, as root,
    with its privilege-separation directory (created like the ssh unit does)."""
    why = ""
    if not os.path.exists(SSHD):
        why = "openssh-server (sshd) is not installed"
    elif os.geteuid() != 0:
        why = "sshd -T needs root (host keys, /run/sshd)"
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)

# (keyword, valid values, invalid values)
SCALARS: list[tuple[str, list[str], list[str]]] = [
    ("PermitRootLogin", ["yes", "no", "prohibit-password", "without-password",
                         "forced-commands-only", "No", "PROHIBIT-PASSWORD"], ["maybe", "no#x"]),
    ("PasswordAuthentication", ["yes", "no", "NO", "Yes"], ["y", "off", "no#x"]),
    ("KbdInteractiveAuthentication", ["yes", "no"], ["1"]),
    ("ChallengeResponseAuthentication", ["yes", "no"], ["true"]),
    ("PermitEmptyPasswords", ["yes", "no"], ["nope"]),
    ("PubkeyAuthentication", ["yes", "no"], ["sure"]),
    ("X11Forwarding", ["yes", "no"], ["x"]),
    ("MaxAuthTries", ["3", "4", "6", "10", "+2", "007"], ["-1", "four", "3x", "2147483648"]),
    ("MaxSessions", ["2", "10"], ["ten"]),
    ("LoginGraceTime", ["30", "1m", "1m30s", "2H", "0", "1w"], ["1x", "-5", "m"]),
    ("ClientAliveInterval", ["0", "300", "5m"], ["soon"]),
    ("ClientAliveCountMax", ["0", "3"], ["-3"]),
    ("AllowTcpForwarding", ["yes", "no", "all", "local", "remote", "ALL"], ["both"]),
    ("AllowAgentForwarding", ["yes", "no"], ["maybe"]),
    ("GatewayPorts", ["no", "yes", "clientspecified"], ["client"]),
    ("PermitUserEnvironment", ["no", "yes", "LANG,LC_*", "YES"], []),
    ("UsePAM", ["yes", "no"], ["pam"]),
    ("LogLevel", ["INFO", "verbose", "DEBUG1", "debug3", "QUIET"], ["LOUD"]),
    ("IgnoreRhosts", ["yes", "no", "shosts-only"], ["x"]),
    ("PermitTunnel", ["no", "yes", "point-to-point", "ethernet"], ["tun"]),
    ("Compression", ["yes", "no", "delayed"], ["zlib"]),
    ("UseDNS", ["yes", "no"], ["dns"]),
    ("StrictModes", ["yes", "no"], ["strict"]),
    ("PrintMotd", ["yes", "no"], ["motd"]),
    ("HostbasedAuthentication", ["no", "yes"], ["x"]),
    ("PermitTTY", ["yes", "no"], ["tty"]),
    ("DisableForwarding", ["yes", "no"], ["x"]),
    ("Banner", ["none", "/etc/issue.net", '"/etc/my banner"'], []),
    ("ChrootDirectory", ["none", "/srv/%u"], []),
    ("AuthenticationMethods", ["any", "publickey", "publickey,password publickey"], []),
    ("AuthorizedKeysFile", [".ssh/authorized_keys", ".ssh/a .ssh/b", "none"], []),
    ("AddressFamily", ["any", "inet", "inet6"], ["ipx"]),
    ("TCPKeepAlive", ["yes", "no"], ["x"]),
    ("KeepAlive", ["yes", "no"], ["x"]),
    ("X11UseLocalhost", ["yes", "no"], ["x"]),
    ("ForceCommand", ["/usr/bin/true", "internal-sftp -d /srv", "none"], []),
    ("SetEnv", ["A=1", "A=1 B=2"], ["A"]),
]
ACCUM: list[tuple[str, list[str]]] = [
    ("Port", ["22", "2222", "ssh", "8022"]),
    ("AcceptEnv", ["LANG LC_*", "XMODIFIERS", "TZ"]),
    ("AllowUsers", ["root", "nobody daemon", "alice@10.0.0.0/8"]),
    ("DenyUsers", ["bob", "mallory eve"]),
    ("AllowGroups", ["root", "nogroup"]),
    ("DenyGroups", ["games"]),
]
MATCH_OK = {"PermitRootLogin", "PasswordAuthentication", "KbdInteractiveAuthentication",
            "ChallengeResponseAuthentication", "PermitEmptyPasswords", "PubkeyAuthentication",
            "X11Forwarding", "MaxAuthTries", "MaxSessions", "ClientAliveInterval",
            "ClientAliveCountMax", "AllowTcpForwarding", "AllowAgentForwarding",
            "GatewayPorts", "LogLevel", "IgnoreRhosts", "PermitTunnel", "HostbasedAuthentication",
            "PermitTTY", "DisableForwarding", "Banner", "ChrootDirectory",
            "AuthenticationMethods", "AuthorizedKeysFile", "X11UseLocalhost", "AcceptEnv",
            "ForceCommand", "SetEnv",
            "AllowUsers", "DenyUsers", "AllowGroups", "DenyGroups"}
CRITERIA = [
    "User root", "User nobody", "User !root,*", "User !root", "User r*t", "User ROOT",
    "User daemon,nobody", "Group root", "Group nogroup", "Group !root,*", "Host *.example.com",
    "Host !bad.example.com,*", "Address 10.0.0.0/8", "Address 192.168.0.*",
    "Address !10.1.2.3,10.0.0.0/8", "Address 2001:db8::/32", "LocalAddress 10.0.0.1",
    "LocalPort 2222", "User root Address 10.0.0.0/8", "User nobody Host *.example.com",
    "RDomain x",
]
BAD_MATCH = ["User", "Foo bar", "all User root", "Address 10.0.0.1/8", "LocalPort notaport"]
CONNECTIONS = [
    {"user": "root", "host": "a.example.com", "addr": "10.1.2.3", "laddr": "10.0.0.1",
     "lport": "22"},
    {"user": "nobody", "host": "bad.example.com", "addr": "192.168.0.5", "lport": "2222"},
    {"user": "daemon", "host": "Other.Example.org", "addr": "2001:db8::1", "laddr": "10.0.0.2",
     "lport": "22"},
    {"user": "nobody", "addr": "10.9.9.9", "lport": "22"},
]


@dataclass
class Case:
    """One generated configuration."""

    seed: int
    files: dict[str, str] = field(default_factory=dict)
    """Path relative to the case directory -> content; ``sshd_config`` is the main file."""
    invalid: str = ""
    """Why the generator expects sshd to refuse it (informative only)."""


class Gen:
    """Builds the text of one case."""

    def __init__(self, seed: int, base: str) -> None:
        self.r = random.Random(seed)
        self.base = base
        self.case = Case(seed)

    def spell(self, kw: str) -> str:
        r = self.r.random()
        if r < 0.15:
            return kw.lower()
        if r < 0.25:
            return kw.upper()
        return kw

    def line(self, kw: str, value: str) -> str:
        k = self.spell(kw)
        sep = self.r.choice([" ", " ", " ", "\t", "=", " = ", "= ", "  "])
        if self.r.random() < 0.1 and " " not in value and '"' not in value:
            value = f'"{value}"'
        tail = self.r.choice(["", "", "", "", " # comment", "\t#x"])
        lead = self.r.choice(["", "", "", "  ", "\t"])
        return f"{lead}{k}{sep}{value}{tail}"

    def directive(self, in_match: bool) -> str:
        r = self.r
        if r.random() < 0.25:
            kw, vals = r.choice(ACCUM)
            if in_match and kw == "Port":
                kw, vals = "AcceptEnv", ACCUM[1][1]
            return self.line(kw, r.choice(vals))
        kw, good, bad = r.choice(SCALARS)
        if in_match and kw not in MATCH_OK:
            kw, good, bad = SCALARS[1]
        if bad and r.random() < 0.025:
            self.case.invalid = f"bad value for {kw}"
            return self.line(kw, r.choice(bad))
        return self.line(kw, r.choice(good))

    def invalid_line(self) -> str:
        r = self.r
        kind = r.randrange(5)
        self.case.invalid = f"invalid line kind {kind}"
        return [
            "NoSuchKeyword yes",
            "PasswordAuthentication no extra",
            "Match User nobody\nPort 2200",
            f"Match {r.choice(BAD_MATCH)}",
            "MaxAuthTries",
        ][kind]

    def block(self, n: int, in_match: bool = False) -> list[str]:
        return [self.directive(in_match) for _ in range(n)]

    def match_block(self) -> list[str]:
        r = self.r
        crit = "all" if r.random() < 0.12 else r.choice(CRITERIA)
        out = [f"{self.spell('Match')} {crit}"]
        if crit == "all" and r.random() < 0.3:
            out.append("Port 2222")  # global keywords are fine after Match all
        out += ["  " + d for d in self.block(r.randint(1, 4), in_match=True)]
        if r.random() < 0.15:
            out.append(f"  Include {self.base}/inc/match-*.conf")
            self.case.files["inc/match-1.conf"] = "\n".join(self.block(2, True)) + "\n"
        return out

    def dropin(self, name: str) -> None:
        r = self.r
        lines = self.block(r.randint(1, 4))
        if r.random() < 0.3:
            lines += self.match_block()  # a Match in an included file ends at its end
        self.case.files[f"sshd_config.d/{name}"] = "\n".join(lines) + "\n"

    def build(self) -> Case:
        r = self.r
        main: list[str] = []
        if r.random() < 0.7:
            names = sorted(r.sample(["00-a.conf", "10-b.conf", "50-cloud.conf", "99-z.conf",
                                     "B.conf", "a.conf", "_u.conf"], r.randint(0, 3)))
            for n in names:
                self.dropin(n)
            if r.random() < 0.2:
                self.case.files["sshd_config.d/.hidden.conf"] = "PasswordAuthentication yes\n"
                self.case.files["sshd_config.d/ignored.txt"] = "PasswordAuthentication yes\n"
            pos = r.choice(["top", "top", "middle", "bottom"])
            inc = f"Include {self.base}/sshd_config.d/*.conf"
            if r.random() < 0.15:
                # relative to /etc/ssh, as sshd resolves it
                inc = f"Include ../..{self.base}/sshd_config.d/*.conf"
            body = self.block(r.randint(1, 6))
            if pos == "top":
                main = [inc, *body]
            elif pos == "middle":
                k = len(body) // 2
                main = [*body[:k], inc, *body[k:]]
            else:
                main = [*body, inc]
        else:
            main = self.block(r.randint(1, 8))
        if r.random() < 0.3:
            # Subsystem: global only; in 9.2 a second definition of a name is fatal
            name = r.choice(["sftp", "sftp", "x"])
            main.insert(r.randrange(len(main) + 1),
                        self.line("Subsystem", f"{name} /usr/lib/openssh/sftp-server -l INFO"))
            if r.random() < 0.1:
                main.insert(0, "Subsystem sftp internal-sftp")
        if r.random() < 0.1:
            main.append(f"Include {self.base}/none-*.conf")  # no match: nothing
        if r.random() < 0.08:
            self.case.files["inc/twice.conf"] = "AcceptEnv TWICE\nPort 2022\n"
            main += [f"Include {self.base}/inc/twice.conf"] * 2
        for _ in range(r.choice([0, 0, 1, 1, 2, 3])):
            main += self.match_block()
        if r.random() < 0.06:
            main.insert(r.randrange(len(main) + 1), self.invalid_line())
        if r.random() < 0.04:
            main.insert(0, f"Include {self.base}/sshd_config")  # include loop
            self.case.invalid = "include loop"
        if r.random() < 0.1:
            main.insert(r.randrange(len(main) + 1), r.choice(["", "# comment", "   ",
                                                              "\t# x", "#Port 1"]))
        self.case.files["sshd_config"] = "\n".join(main) + "\n"
        return self.case
