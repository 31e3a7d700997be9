"""Oracle tests: the parser against the real ``sshd -T`` / ``sshd -t`` (openssh-server).

A seeded corpus of configurations (``sshd_corpus.py``: drop-ins, include order, Match
blocks, aliases, ``=`` syntax, quoting, comments, invalid lines) is written to a temporary
directory; for each, ``sshd -T -f <main> -h <hostkey>`` (and ``-C user=..,host=..,addr=..``
for the Match cases) must agree with :mod:`aiaudit.linux.sshd.config` on every compared keyword,
and sshd must refuse exactly the configurations the parser refuses.
"""

from __future__ import annotations

import glob as globmod
import grp
import os
import pwd
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.linux.sshd import config as sp
from tests.linux.sshd.sshd_corpus import CONNECTIONS, SSHD, Case, Gen, require_sshd

pytestmark = pytest.mark.oracle

CORPUS_SIZE = int(os.environ.get("AIAUDIT_SSHD_CORPUS", "400"))

COMPARED = [
    "permitrootlogin", "passwordauthentication", "kbdinteractiveauthentication",
    "permitemptypasswords", "pubkeyauthentication", "x11forwarding", "maxauthtries",
    "maxsessions", "logingracetime", "clientaliveinterval", "clientalivecountmax",
    "allowtcpforwarding", "allowagentforwarding", "gatewayports", "permituserenvironment",
    "usepam", "loglevel", "ignorerhosts", "permittunnel", "compression", "usedns",
    "strictmodes", "printmotd", "hostbasedauthentication", "permittty", "disableforwarding",
    "banner", "chrootdirectory", "authenticationmethods", "authorizedkeysfile",
    "addressfamily", "tcpkeepalive", "x11uselocalhost", "port", "acceptenv", "allowusers",
    "denyusers", "allowgroups", "denygroups", "syslogfacility", "maxstartups", "subsystem",
    "forcecommand", "setenv",
]
LISTS = {"port", "acceptenv", "allowusers", "denyusers", "allowgroups", "denygroups",
         "subsystem", "setenv"}


@pytest.fixture(scope="module")
def hostkey(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A throw-away ed25519 host key for ``sshd -h``."""
    require_sshd()
    d = tmp_path_factory.mktemp("hostkey")
    key = d / "hk"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    return str(key)


def sshd_T(main: str, hostkey: str, conn: dict[str, str] | None = None
           ) -> tuple[int, dict[str, list[str]], str]:
    """Run ``sshd -T``; (exit code, {lower key: [values]}, stderr)."""
    argv = [SSHD, "-T", "-f", main, "-h", hostkey]
    if conn:
        argv += ["-C", ",".join(f"{k}={v}" for k, v in conn.items())]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    out: dict[str, list[str]] = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        out.setdefault(k.lower(), []).append(v)
    return p.returncode, out, p.stderr


def normalise_sshd(out: dict[str, list[str]]) -> dict[str, list[str]]:
    """sshd's printing → the parser's canonical values (SEMANTICS §2.6)."""
    res = {}
    for k in COMPARED:
        vals = out.get(k, [])
        if k == "permitrootlogin":
            vals = ["prohibit-password" if v == "without-password" else v for v in vals]
        if k == "port":
            vals = sorted(set(vals), key=vals.index)
        if k == "permituserenvironment":
            # printed as written; yes/no are matched with strcasecmp
            vals = [v.lower() if v.lower() in ("yes", "no") else v for v in vals]
        if k == "loglevel":
            vals = ["QUIET" if v == "SILENT" else v for v in vals]
        res[k] = vals
    return res


def ours(eff: sp.Effective) -> dict[str, list[str]]:
    """The parser's effective values in ``sshd -T`` shape."""
    res = {}
    for k in COMPARED:
        s = eff.get(k)
        if k in LISTS:
            vals = list(s.values)
            if k == "port":
                vals = sorted(set(vals), key=vals.index)
            res[k] = vals
        else:
            res[k] = [s.value if s.value is not None else "none"]
    return res


def _read(path: str) -> str:
    if os.path.isdir(path):
        return ""  # as the check's Host reader: sshd reads a directory as empty
    with open(path, encoding="utf-8") as f:
        return f.read()


def _glob(pattern: str) -> list[str]:
    return sorted(globmod.glob(pattern), key=lambda s: s.encode())


def connection(c: dict[str, str]) -> sp.Connection:
    """The parser's connection for a ``-C`` spec (groups from this machine's database)."""
    user = c.get("user")
    groups = None
    if user:
        try:
            pw = pwd.getpwnam(user)
            groups = tuple(grp.getgrgid(g).gr_name
                           for g in os.getgrouplist(user, pw.pw_gid))
        except KeyError:
            groups = ()
    return sp.Connection(user=user, groups=groups, host=c.get("host"), addr=c.get("addr"),
                         laddr=c.get("laddr"), lport=int(c["lport"]) if "lport" in c else None,
                         rdomain=c.get("rdomain"))


def write_case(case: Case, base: Path) -> str:
    for rel, text in case.files.items():
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(base / "sshd_config")


def check_case(case: Case, base: Path, hostkey: str) -> tuple[bool, int, list[str]]:
    """(sshd accepts it, ``sshd -T`` runs compared, disagreements between sshd and the
    parser) for one case."""
    main = write_case(case, base)
    where = f"seed {case.seed}:\n{case.files['sshd_config']}"
    try:
        cfg = sp.load(_read, _glob, main)
        err = None
    except ParseError as exc:
        cfg, err = None, str(exc)
    rc_t = subprocess.run([SSHD, "-t", "-f", main, "-h", hostkey], capture_output=True,
                          text=True, timeout=20)
    valid = rc_t.returncode == 0
    if valid != (err is None):
        return valid, 0, [f"{where}\nsshd -t rc={rc_t.returncode} {rc_t.stderr.strip()!r}; "
                          f"parser: {err}"]
    if cfg is None:
        return valid, 0, []
    problems = []
    has_lport = any(b.criteria and any(a == "localport" for a, _ in b.criteria)
                    for b in cfg.blocks)
    specs: list[dict[str, str] | None] = [] if has_lport else [None]
    specs += CONNECTIONS
    for spec in specs:
        rc, out, stderr = sshd_T(main, hostkey, spec)
        try:
            got = ours(cfg.effective(connection(spec) if spec else None))
        except ParseError as exc:
            # a configuration that only fails for some connections (re-parse for Match)
            if rc == 0:
                problems.append(f"{where}\n-C {spec}: sshd accepts, parser: {exc}")
            continue
        if rc != 0:
            problems.append(f"{where}\nsshd -T {spec} failed: {stderr.strip()}")
            continue
        want = normalise_sshd(out)
        diff = {k: (want[k], got[k]) for k in COMPARED if want[k] != got[k]}
        if diff:
            problems.append(f"{where}\n-C {spec}: sshd vs parser {diff}")
    return valid, len(specs), problems


def test_corpus_against_sshd(hostkey: str, tmp_path: Path) -> None:
    """Every generated configuration: same verdict (valid/invalid) and same values."""
    cases = []
    for seed in range(CORPUS_SIZE):
        base = tmp_path / f"c{seed}"
        cases.append((Gen(seed, str(base)).build(), base))
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 2)) as pool:
        results = list(pool.map(lambda cb: check_case(cb[0], cb[1], hostkey), cases))
    problems = [p for r in results for p in r[2]]
    valid = sum(1 for r in results if r[0])
    runs = sum(r[1] for r in results)
    print(f"sshd corpus: {len(cases)} configurations, {valid} valid, "
          f"{len(cases) - valid} refused, {runs} sshd -T runs compared")
    assert valid > CORPUS_SIZE // 2 and len(cases) - valid > CORPUS_SIZE // 20
    import re
    kinds = sorted({k for p in problems for k in re.findall(r"'(\w+)': \(\[", p)})
    assert not problems, (f"{len(problems)} disagreements {kinds}:\n\n"
                          + "\n\n".join(problems[:6]))


def _probe(text: str, tmp: Path, hostkey: str) -> tuple[int, str]:
    f = tmp / "probe.conf"
    f.write_text(text)
    p = subprocess.run([SSHD, "-t", "-f", str(f), "-h", hostkey], capture_output=True,
                       text=True, timeout=20)
    return p.returncode, p.stderr


def installed_release() -> tuple[int, int]:
    """(major, minor) of the installed openssh-server (its dpkg version)."""
    from aiaudit.linux.sshd.defaults import release

    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "openssh-server"],
                         capture_output=True, text=True).stdout
    rel = release(out.strip())[0]
    assert rel is not None, out
    return rel


def test_keyword_table_against_sshd(hostkey: str, tmp_path: Path) -> None:
    """Every keyword in the table that the installed release knows is known to sshd, and
    allowed in Match exactly when the table says so for that release; a keyword of a later
    release and a name outside the table are unknown to sshd."""
    release = installed_release()
    wrong = []
    for kw in sp.KEYWORD_LIST:
        if kw.vtype in ("match", "include"):
            continue
        rc, err = _probe(f"Match User nobody\n{kw.name} xyzzy\n", tmp_path, hostkey)
        if (kw.since <= release) == ("Bad configuration option" in err):
            wrong.append(f"{kw.name}: since {kw.since}, sshd {release}: {err.strip()}")
        if kw.since > release:
            continue
        in_match = "not allowed within a Match block" not in err
        if in_match != sp._match_allowed(kw, release):
            wrong.append(f"{kw.name}: table match={kw.match}, sshd {in_match}")
    rc, err = _probe("NoSuchKeyword yes\n", tmp_path, hostkey)
    assert rc != 0 and "Bad configuration option" in err
    assert not wrong, wrong


def test_defaults_against_sshd(hostkey: str, tmp_path: Path) -> None:
    """The compiled-in defaults in the table are what sshd -T prints for an empty config
    (except where Debian's build differs: see the keyword notes)."""
    f = tmp_path / "empty.conf"
    f.write_text("\n")
    rc, out, err = sshd_T(str(f), hostkey)
    assert rc == 0, err
    cfg = sp.load(_read, _glob, str(f))
    assert normalise_sshd(out) == ours(cfg.effective())
    mismatched = []
    for kw in sp.KEYWORD_LIST:
        if kw.default is None or kw.option or kw.name.lower() not in out:
            continue
        printed = out[kw.name.lower()][0]
        if kw.name == "PermitRootLogin":
            printed = "prohibit-password" if printed == "without-password" else printed
        if printed != kw.default:
            mismatched.append((kw.name, kw.default, printed))
    assert not mismatched


def test_include_depth_limit(hostkey: str, tmp_path: Path) -> None:
    """Files nested 16 includes deep are read, 17 deep refused (an include loop ends the
    same way), by sshd and the parser alike."""
    for depth, ok in ((15, True), (16, False)):
        d = tmp_path / f"d{depth}"
        d.mkdir()
        for i in range(depth):
            (d / f"f{i}.conf").write_text(f"Include {d}/f{i + 1}.conf\n")
        (d / f"f{depth}.conf").write_text("PasswordAuthentication no\n")
        rc, _err = _probe(f"Include {d}/f0.conf\n", d, hostkey)
        assert (rc == 0) is ok, depth
        try:
            sp.load(_read, _glob, str(d / "probe.conf"))
            parsed = True
        except ParseError:
            parsed = False
        assert parsed is ok, depth


def test_corpus_is_reproducible(tmp_path: Path) -> None:
    """The generator is seeded: the same seed gives the same files (needs no sshd)."""
    a = Gen(7, "/x").build()
    b = Gen(7, "/x").build()
    assert a.files == b.files


def test_every_printed_keyword_is_known(hostkey: str, tmp_path: Path) -> None:
    """Every keyword ``sshd -T`` prints is in the table (no false "unknown keyword")."""
    f = tmp_path / "empty.conf"
    f.write_text("\n")
    rc, out, err = sshd_T(str(f), hostkey)
    assert rc == 0, err
    assert sorted(k for k in out if k not in sp.KEYWORDS) == []


def test_aliases_set_their_option(hostkey: str, tmp_path: Path) -> None:
    """Each alias in the table sets the option the table names (and the first spelling
    wins either way round)."""
    f = tmp_path / "alias.conf"
    checked = 0
    for kw in sp.KEYWORD_LIST:
        if not kw.option or kw.vtype != "choice":
            continue
        target = sp.OPTIONS[kw.opt]
        dflt = target.default
        other = next(c for _s, c in kw.choices if c != dflt)
        for text in (f"{kw.name} {other}\n{target.name} {dflt}\n",
                     f"{target.name} {dflt}\n{kw.name} {other}\n"):
            f.write_text(text)
            rc, out, err = sshd_T(str(f), hostkey)
            assert rc == 0, err
            ours_v = sp.load(_read, _glob, str(f)).value(target.name).value
            assert out[target.name.lower()] == [ours_v], (kw.name, text)
            checked += 1
    assert checked >= 8


EDGE_SYNTAX = [
    b"PasswordAuthentication no\r\nX11Forwarding yes\r\n", b"Match=User root\nX11Forwarding yes\n",
    b'"PasswordAuthentication"=no\n', b'PasswordAuthentication ""\n', b'AllowUsers ""\n',
    b"PasswordAuthentication\tno\r\n", b"Port 0\n", b"Port 65535\n", b"Port 65536\n",
    b"Port +22\n", b"Port\t=\t2222\n", b"MaxAuthTries 0x10\n", b"MaxAuthTries 010\n",
    b"MaxAuthTries  -0\n", b"MaxSessions 2147483648\n", b"LoginGraceTime 1h1h\n",
    b"LoginGraceTime 1H30\n", b"ClientAliveInterval 3551w\n", b"ClientAliveInterval 2147483647\n",
    b"ForceCommand   internal-sftp  -u 002 \n", b'AuthorizedKeysFile "a b" c\n',
    b"PasswordAuthentication no\\ \n", b"PasswordAuthentication 'no'\n",
    b"PasswordAuthentication n'o'\n", b"PasswordAuthentication =no\n",
    b"PasswordAuthentication ==no\n", b"PasswordAuthentication no\x0c\n",
    b"Match User root #comment\nX11Forwarding yes\n", b"Match all # x\nX11Forwarding yes\n",
    b"Match all User root\n", b"Match User\tr*\n X11Forwarding yes\n",
    b"Match user root group root\n X11Forwarding yes\n", b"Match LocalPort 22\n Banner /b\n",
    b"PermitRootLogin Without-Password\n", b"LogLevel debug1\n", b"SyslogFacility local7\n",
    b"AcceptEnv A=B\n", b"SetEnv A\n", b"AuthenticationMethods publickey,password:pam\n",
    b"KbdInteractiveAuthentication no\nAuthenticationMethods keyboard-interactive\n",
    b"AuthorizedKeysCommand /bin/x\n", b"Subsystem sftp\n", b"Banner a b\n",
    b"Include\n", b'Include ""\n', b"Include /nonexistent/*.conf /also/none\n",
    b"Match User x\nUseLogin no\n", b"Match User x\nRSAAuthentication no\n",
    b"Port 22\nPort 22\n", b"Subsystem sftp /a\nSubsystem sftp /b\n",
    *(f"Match Address {a}\n X11Forwarding yes\n".encode() for a in (
        "10.0.0.x/8", "::1/129", "10.0.0.0/-1", "10.0.0.0/08", "010.0.0.1", "10.1",
        "10.0.0.1/32", "::ffff:10.0.0.1", "0x0a.0.0.1", "10.0.0.0/33", "10.0.0.1/8",
        "!10.0.0.1", "10.0.0.2,!10.0.0.1,10.0.0.0/8", "10.0.0.?", "[::1]")),
]
"""Lexing, number, time, CIDR and structure edge cases (found while comparing with sshd)."""


@pytest.mark.parametrize("text", EDGE_SYNTAX, ids=[repr(t)[2:40] for t in EDGE_SYNTAX])
def test_edge_syntax_against_sshd(hostkey: str, tmp_path: Path, text: bytes) -> None:
    """Same verdict and same values as ``sshd -T -C addr=10.0.0.1,user=root,lport=22``."""
    f = tmp_path / "edge.conf"
    f.write_bytes(text)
    spec = {"user": "root", "addr": "10.0.0.1", "lport": "22"}
    rc, out, err = sshd_T(str(f), hostkey, spec)
    try:
        got = ours(sp.load(_read, _glob, str(f)).effective(connection(spec)))
    except ParseError as exc:
        assert rc != 0, f"sshd accepts, parser: {exc}"
        return
    assert rc == 0, f"sshd refuses ({err.strip()}), parser accepts"
    assert got == normalise_sshd(out)


def test_include_of_directory_and_dangling_link(hostkey: str, tmp_path: Path) -> None:
    """An Include naming a directory reads as empty; a dangling link found by a glob is
    fatal (sshd exits) -- the parser (with the check's reading rules) agrees."""
    d = tmp_path / "dd"
    d.mkdir()
    ok = tmp_path / "dir.conf"
    ok.write_text(f"Include {d}\nPasswordAuthentication no\n")
    rc, out, err = sshd_T(str(ok), hostkey)
    assert rc == 0, err
    assert sp.load(_read, _glob, str(ok)).value("PasswordAuthentication").value == \
        out["passwordauthentication"][0] == "no"
    (d / "broken.conf").symlink_to(tmp_path / "missing")
    bad = tmp_path / "dangling.conf"
    bad.write_text(f"Include {d}/*.conf\n")
    rc, _out, _err = sshd_T(str(bad), hostkey)
    assert rc != 0
    with pytest.raises(ParseError):
        sp.load(_read, _glob, str(bad))


MAX_STARTUPS = ["20", "5:50", "10:30:100", "10:30:5", "10:0:100", "10:101:100", "20abc",
                "5:", "10:30:100x", "-1", "0", "+7", "99999999999", "1:1:1", "3:100:2",
                "x", "10:30", "10::100"]


def test_max_startups_against_sshd(hostkey: str, tmp_path: Path) -> None:
    """``MaxStartups`` values and refusals as sshd's sscanf-based reader gives them
    (``sshd -T`` prints ``begin:rate:full``; ``5:50`` or ``0`` stop it)."""
    wrong = []
    for arg in MAX_STARTUPS:
        main = tmp_path / "ms.conf"
        main.write_text(f"MaxStartups {arg}\n")
        p = subprocess.run([SSHD, "-T", "-f", str(main), "-h", hostkey], capture_output=True,
                           text=True, timeout=20)
        real = next((ln.split()[1] for ln in p.stdout.splitlines()
                     if ln.startswith("maxstartups ")), None) if p.returncode == 0 else None
        mine = sp.max_startups(arg)
        if mine != real:
            wrong.append(f"{arg!r}: sshd {real} ({p.stderr.strip()[:80]}), ours {mine}")
    assert not wrong, wrong
