"""Generated limits configurations for the pam_limits oracle, and the model's prediction.

The prediction goes through the same code as the check (``limits_files`` on a fixture root,
``subject_for``, :func:`aiaudit.linux.pam_limits.conf.decide`), then applies what the kernel does
with the result: ``setrlimit`` fails with EPERM when the new hard limit is above the current
one without CAP_SYS_RESOURCE or a nofile limit is above ``fs.nr_open``, and Debian's patch 032
makes that failure harmless (the process keeps its limits).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from aiaudit.core.host import Host
from aiaudit.linux.accounts import users
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits.conf import subject_for
from aiaudit.linux.pam_limits.files import PamBuild, limits_files
from aiaudit.linux.pam_limits.stack import pam_stack
from aiaudit.linux.pam_limits.start import FD_SETSIZE

PASSWD = ("root:x:0:0:root:/root:/bin/sh\n"
          "alice:x:1000:1000::/home/alice:/bin/sh\n"
          "bob:x:1001:2000::/home/bob:/bin/sh\n"
          "carol:x:1500:1500::/home/carol:/bin/sh\n")
GROUP = ("root:x:0:\nalice:x:1000:\ncarol:x:1500:\n"
         "gpu:x:2000:alice\nml:x:2001:alice,carol\nwheel:x:10:root\n")
USERS = ["alice", "alice", "bob", "carol", "root"]
DOMAINS = ["*", "*", "*", "alice", "alice", "bob", "root", "carol", "@gpu", "@gpu", "@ml",
           "@root", "@wheel", "@:2000", "@2000:", "@1000:1999", "@:0", "1000:", ":1000",
           "1000:1500", "0:", ":0", "%gpu", "%", "%:2000", "ALICE", "1000x:", "@nonexist",
           "@", "alice:"]
TYPES = ["soft", "hard", "-", "-", "SOFT", "Hard", "bogus"]
ITEMS = ["nofile", "nofile", "memlock", "memlock", "NOFILE", "Memlock", "nproc"]
NOFILE_VALUES = ["2048", "4096", "8192", "16384", "3000", "unlimited", "-1", "Infinity",
                 "-", "-5", "10k", "abc", "+4000", "12000extra"]
MEMLOCK_VALUES = ["64", "1024", "4096", "8192", "unlimited", "infinity", "-", "-1", "8G",
                  "abc", "2048kb", "+512"]
NOLIMITS = ["alice -", "@gpu -", "* -", "1000: -", "bob -", "%:1000 -", "@:2001 -",
            "root -", "carol -x", "alice - extra"]
NAMES = ["00-a.conf", "10-b.conf", "B.conf", "_x.conf", "zz.conf", ".hidden.conf",
         "x.conf~", "90-c.conf"]


def _value(rng: random.Random, item: str) -> str:
    return rng.choice(NOFILE_VALUES if item.lower() == "nofile" else MEMLOCK_VALUES)


def _line(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.05:
        return rng.choice(NOLIMITS)
    if r < 0.08:
        return rng.choice(["# comment", "", "   ", "* soft", "* - nofile", "garbage line x"])
    item = rng.choice(ITEMS)
    parts = [rng.choice(DOMAINS), rng.choice(TYPES), item, _value(rng, item)]
    sep = rng.choice([" ", " ", "\t", "  \t"])
    text = sep.join(parts)
    r = rng.random()
    if r < 0.1:
        text = "  " + text
    elif r < 0.2:
        text += " # note"
    elif r < 0.25:
        text += " extra"
    elif r < 0.3:
        text += "\r"
    elif r < 0.33:
        text = "#" + "x" * rng.choice([1021, 1022, 1023]) + text  # fgets chunking
    return text


def _file(rng: random.Random) -> str:
    return "".join(_line(rng) + "\n" for _ in range(rng.randint(0, 6)))


def generate(n: int, ceiling: dict[str, int], seed: int = 1) -> list[dict[str, Any]]:
    """``n`` cases; limits stay within this process's hard ``ceiling`` per item."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        files: dict[str, Any] = {}
        if rng.random() < 0.96:
            files["limits.conf"] = _file(rng)
        for name in rng.sample(NAMES, rng.randint(0, 3)):
            files[f"limits.d/{name}"] = _file(rng)
        args = ""
        if rng.random() < 0.05:
            files["custom.conf"] = _file(rng)
            args = rng.choice(["conf=/etc/security/custom.conf", "conf=/etc/security/nope"])
        if rng.random() < 0.02:
            files["limits.d/50-dangling.conf"] = {"link": "/nonexistent"}
        user = rng.choice(USERS) if rng.random() < 0.98 else "nosuchuser"
        nf, ml = ceiling["nofile"], ceiling["memlock"]
        cases.append({
            "id": i, "files": files, "passwd": PASSWD, "group": GROUP, "user": user,
            "args": args,
            "pid1": {"nofile": [rng.choice([500, 900, 1024, 5000]), nf],
                     "memlock": [rng.choice([65536, 1048576]), ml]},
            "child": {"nofile": [rng.choice([1000, 1500]), nf],
                      "memlock": [rng.choice([32768, 131072]), ml]},
        })
    return cases


def _root(base: Path, case: dict[str, Any]) -> Path:
    sec = base / "etc" / "security"
    (sec / "limits.d").mkdir(parents=True)
    for rel, content in case["files"].items():
        p = sec / rel
        if isinstance(content, dict):
            p.symlink_to(content["link"])
        else:
            p.write_bytes(content.encode("latin-1"))
    (base / "etc" / "passwd").write_text(case["passwd"])
    (base / "etc" / "group").write_text(case["group"])
    return base


def _inf(v: int) -> int:
    return lp.RLIM_INFINITY if v == -1 else v


def predict(case: dict[str, Any], base: Path, *, cap_sys_resource: bool,
            nr_open: int) -> dict[str, Any]:
    """What the real module should leave in the session process (same shape as the
    driver's results; ``open`` is 0, 3 (PAM_SERVICE_ERR) or 10 (PAM_USER_UNKNOWN))."""
    host = Host(str(_root(base, case)), live=False)
    build = PamBuild(True, "1.5.2-6", (1, 5, 2), "oracle")
    child = {k: tuple(_inf(x) for x in v) for k, v in case["child"].items()}
    acc = users.accounts(host)
    user = acc.db.user(case["user"])

    def out(vals: dict[str, tuple[int, int]], rc: int) -> dict[str, Any]:
        res: dict[str, Any] = {"open": rc}
        for k, (s, h) in vals.items():
            res[k] = [-1 if s == lp.RLIM_INFINITY else s, -1 if h == lp.RLIM_INFINITY else h]
        return res

    if user is None:
        return out(child, 10)
    conf = None
    for a in case["args"].split():
        if a.startswith("conf="):
            conf = a[5:]
    files, _notes = limits_files(host, build, conf)
    sides = {}
    for item in ("nofile", "memlock"):
        s, h = (_inf(x) for x in case["pid1"][item])
        if item == "nofile":
            s = min(s, FD_SETSIZE)
        sides[item] = (lp.Side(s, lp.KERNEL), lp.Side(h, lp.KERNEL))
    dec = lp.decide(files, subject_for(acc, user), sides,
                    lp.Variant(debian_root=True, nr_open=nr_open))
    if dec.status == "failed":
        return out(child, 3)
    if dec.status == "nolimits":
        return out(child, 0)
    got = {}
    for item in ("nofile", "memlock"):
        soft, hard = dec.limits[item]
        new = (soft.value, hard.value)
        refused = (hard.value > child[item][1] and not cap_sys_resource) or \
            (item == "nofile" and hard.value > nr_open)
        got[item] = child[item] if refused else new
    return out(got, 0)


LIMITS_ON = "* - nofile 3000\n"
STACKS: list[tuple[str, dict[str, str], dict[str, str | None]]] = [
    # (name, /etc/pam.d files, /etc/security files; None = absent)
    ("direct", {"svc": "session required pam_limits.so\n"}, {}),
    ("at-include", {"svc": "@include common-session\n",
                    "common-session": "session required pam_unix.so\n"
                                      "session required pam_limits.so\n"}, {}),
    ("include", {"svc": "session include common-session\n",
                 "common-session": "session required pam_limits.so\n"}, {}),
    ("substack", {"svc": "session substack common-session\n",
                  "common-session": "session required pam_limits.so\n"}, {}),
    ("nested", {"svc": "@include a\n", "a": "session include b\n",
                "b": "session substack c\n", "c": "session optional pam_limits.so\n"}, {}),
    ("include-other-type", {"svc": "auth include common\n",
                            "common": "session required pam_limits.so\n"}, {}),
    ("at-include-auth-line", {"svc": "@include common\n",
                              "common": "auth required pam_limits.so\n"}, {}),
    ("commented", {"svc": "#session required pam_limits.so\n"}, {}),
    ("inline-comment", {"svc": "session optional pam_permit.so # pam_limits.so\n"}, {}),
    ("dash-type", {"svc": "-session required pam_limits.so\n"}, {}),
    ("full-path", {"svc": "session required "
                          "/lib/x86_64-linux-gnu/security/pam_limits.so\n"}, {}),
    ("upper-case", {"svc": "SESSION REQUIRED pam_limits.so\n"}, {}),
    ("continuation", {"svc": "session required \\\n pam_limits.so\n"}, {}),
    ("other-fallback", {"other": "session required pam_limits.so\n"}, {}),
    ("optional-missing-conf", {"svc": "session optional pam_limits.so\n"},
     {"limits.conf": None}),
    ("required-missing-conf", {"svc": "session required pam_limits.so\n"},
     {"limits.conf": None}),
    ("bracket-ignore-missing", {"svc": "session [success=ok default=ignore] pam_limits.so\n"},
     {"limits.conf": None}),
    ("missing-at-include", {"svc": "@include nothere\nsession required pam_limits.so\n"}, {}),
    ("missing-include", {"svc": "session include nothere\n"
                                "session required pam_limits.so\n"}, {}),
    ("conf-arg", {"svc": "session required pam_limits.so conf=/etc/security/c.conf\n"},
     {"c.conf": "* - nofile 4000\n"}),
]


def stack_cases(ceiling: dict[str, int]) -> list[dict[str, Any]]:
    """Driver cases for :data:`STACKS` (user alice; ``* - nofile 3000`` in limits.conf)."""
    out = []
    for name, pamd, sec in STACKS:
        # a stack without any successful session module is PAM_PERM_DENIED by libpam
        pamd = {k: ("session required pam_permit.so\n" + v if k in ("svc", "other") else v)
                for k, v in pamd.items()}
        files: dict[str, Any] = {"limits.conf": LIMITS_ON, **sec}
        out.append({"id": name, "service": "svc", "pamd": pamd, "files": files,
                    "passwd": PASSWD, "group": GROUP, "user": "alice",
                    "pid1": {"nofile": [900, ceiling["nofile"]],
                             "memlock": [65536, ceiling["memlock"]]},
                    "child": {"nofile": [1000, ceiling["nofile"]],
                              "memlock": [65536, ceiling["memlock"]]}})
    return out


def stack_outcome(real: dict[str, Any]) -> str:
    """``refused``, ``ran`` or ``skipped`` from a driver result."""
    if real.get("open") != 0:
        return "refused"
    return "ran" if real["nofile"][0] in (3000, 4000) else "skipped"


def stack_predict(case: dict[str, Any], base: Path) -> str:
    """The model's outcome for a stack case: the check's PAM walker and file reader."""
    etc = base / "etc"
    (etc / "pam.d").mkdir(parents=True)
    for name, text in case["pamd"].items():
        (etc / "pam.d" / name).write_text(text)
    (etc / "security").mkdir()
    for rel, text in case["files"].items():
        if text is not None:
            (etc / "security" / rel).write_text(text)
    host = Host(str(base), live=False)
    st = pam_stack(host, case["service"])
    if st.broken:
        return "refused"
    if not st.calls:
        return "skipped"
    build = PamBuild(True, "1.5.2-6", (1, 5, 2), "oracle")
    for call in st.calls:
        files, _ = limits_files(host, build, call.conf)
        if any(isinstance(lines, str) for _, lines in files):
            if call.fatal:
                return "refused"
            continue
        return "ran"
    return "skipped"


# ------------------------------------------------------------------ directory users (NSS)
# Users and groups only NSS knows (libnss-extrausers, /var/lib/extrausers), as an sssd/LDAP
# cluster has them: the machine's files hold root and one local group listing a directory
# user.  Hand-made, in the shapes getent prints for such users.
NSS_PASSWD = ("ldapuser:x:5001:5001:LDAP user:/home/ldapuser:/bin/sh\n"
              "ldap2:x:6001:5003:second LDAP user:/home/ldap2:/bin/sh\n")
NSS_GROUP = ("ldapgrp:x:5001:\ngpu:x:5002:ldapuser\nhpc:x:5003:ldapuser\n"
             "ldap2only:x:5004:ldap2\n")
NSS_NSSWITCH = ("passwd:         files extrausers\ngroup:          files extrausers\n"
                "shadow:         files\n")
LOCAL_PASSWD = "root:x:0:0:root:/root:/bin/sh\n"
LOCAL_GROUP = "root:x:0:\nvideo:x:44:ldapuser\n"
NSS_USERS = ["ldapuser", "ldapuser", "ldap2"]
NSS_DOMAINS = ["*", "*", "ldapuser", "ldap2", "@ldapgrp", "@gpu", "@gpu", "@hpc", "@video",
               "@ldap2only", "@:5002", "@:44", "@:5003", "@5001:", "@5000:5002", "@5003:5003",
               "5000:", ":5001", "6000:7000", "@nonexist", "@root", "root"]
NSS_NOLIMITS = ["@gpu -", "ldap2 -", "@hpc -", "@video -"]
LIMIT_RULES = {"LIMITS-NOFILE-SOFT": ("nofile", 0), "LIMITS-NOFILE-HARD": ("nofile", 1),
               "LIMITS-MEMLOCK-SOFT": ("memlock", 0), "LIMITS-MEMLOCK-HARD": ("memlock", 1)}
"""The shipped limits rules (dl-training) and the session limit each one judges."""


def _nss_values(item: str, ceiling: dict[str, int], can_raise: bool, nr_open: int
                ) -> list[str]:
    """Values in limits.conf units the kernel accepts for this test process: without
    CAP_SYS_RESOURCE a hard limit may not go above the session's (the ceiling)."""
    if item == "nofile":
        top = ceiling["nofile"]
        out = [v for v in ("2048", "4096", "8192", "16384", "65536") if int(v) <= top]
        return out + (["unlimited"] if can_raise or nr_open <= top else [])
    top = ceiling["memlock"]
    out = [v for v in ("64", "1024", "4096", "8192") if top == -1 or int(v) * 1024 <= top]
    return out + (["unlimited"] if can_raise or top == -1 else [])


def nss_cases(n: int, ceiling: dict[str, int], *, can_raise: bool, nr_open: int,
              seed: int = 7) -> list[dict[str, Any]]:
    """``n`` driver cases whose user exists only through NSS, each with ``scan``: the
    shipped limits and training-user rules, live, for that user."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        def line() -> str:
            if rng.random() < 0.06:
                return rng.choice(NSS_NOLIMITS)
            item = rng.choice(["nofile", "memlock"])
            return " ".join([rng.choice(NSS_DOMAINS), rng.choice(["soft", "hard", "-", "-"]),
                             item, rng.choice(_nss_values(item, ceiling, can_raise,
                                                          nr_open))])

        files: dict[str, Any] = {
            "limits.conf": "".join(line() + "\n" for _ in range(rng.randint(1, 5)))}
        if rng.random() < 0.5:
            files["limits.d/90-site.conf"] = "".join(line() + "\n"
                                                     for _ in range(rng.randint(1, 3)))
        user = NSS_USERS[i % len(NSS_USERS)]
        cases.append({
            "id": f"nss{i}", "files": files, "passwd": LOCAL_PASSWD, "group": LOCAL_GROUP,
            "user": user, "service": "sshd",
            "pamd": {"sshd": "session required pam_limits.so\n"},
            "nss": {"nsswitch": NSS_NSSWITCH, "passwd": NSS_PASSWD, "group": NSS_GROUP},
            "pid1": {"nofile": [rng.choice([900, 1024, 5000]), ceiling["nofile"]],
                     "memlock": [rng.choice([65536, 1048576]), ceiling["memlock"]]},
            "child": {"nofile": [1000, ceiling["nofile"]],
                      "memlock": [32768, ceiling["memlock"]]},
            "scan": None,  # filled in by the test (the aiaudit it runs)
        })
    return cases


def scan_limits(scan: dict[str, Any]) -> dict[str, Any]:
    """From a live scan's JSON report: each limits rule's (status, value) and the
    training-user rules' statuses; ``nolimits`` when the model says a no-limits line
    leaves the session with what it had."""
    import json

    report = json.loads(scan["out"])
    got: dict[str, Any] = {"nolimits": False}
    for r in report["results"]:
        rid = r["rule_id"]
        if rid in LIMIT_RULES:
            _item, idx = LIMIT_RULES[rid]
            value = r.get("data", {}).get("hard" if idx else "soft")
            got[rid] = -1 if value == "unlimited" else (int(value) if value else None)
            got["nolimits"] |= "sets no limits at all" in r["message"]
        got[f"{rid}:status"] = r["status"]
        got[f"{rid}:message"] = r["message"]
    return got
