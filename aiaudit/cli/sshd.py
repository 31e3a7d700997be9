"""``aiaudit sshd``: the effective sshd configuration of the scanned root for one
connection, as ``sshd -T -C user=..,host=..,addr=..`` prints it (the decision is
:mod:`aiaudit.linux.sshd.view`).  A configuration sshd would refuse is an error naming
file and line (exit 2)."""

from __future__ import annotations

import argparse
import json

from aiaudit.core.errors import ExitCode, UsageError
from aiaudit.core.host import Host
from aiaudit.linux.sshd.view import render_text, view


def populate(p: argparse.ArgumentParser) -> None:
    """Arguments of ``aiaudit sshd``."""
    p.add_argument("--root", default="/", metavar="DIR",
                   help="root of the system whose sshd configuration is read (default /)")
    p.add_argument("--connection", "-C", metavar="SPEC",
                   help="connection to evaluate Match blocks for, as sshd -C takes it: "
                        "user=alice,host=h.example,addr=10.1.2.3[,laddr=..,lport=..,"
                        "rdomain=..]")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (sshd -T lines) or json")


def cmd(args: argparse.Namespace) -> int:
    """``aiaudit sshd``."""
    import os

    if not os.path.isdir(args.root):
        raise UsageError(f"--root {args.root}: not a directory")
    host = Host(args.root, live=False)
    v = view(host, args.connection)
    if args.format == "json":
        print(json.dumps(v, indent=2, ensure_ascii=False))
    else:
        print(render_text(v), end="")
    return ExitCode.OK
