"""``aiaudit sshd``: the effective sshd configuration of the scanned root for one
connection, as ``sshd -T -C user=..,host=..,addr=..`` prints it (the decision is
:mod:`aiaudit.linux.sshd.view`).  A configuration sshd would refuse is an error naming
file and line (exit 2), and so is output that cannot be written (a full disk, a closed
stdout or pipe)."""

from __future__ import annotations

import argparse
import json

from aiaudit.cli.output import write_stdout
from aiaudit.core.errors import ExitCode, UsageError
from aiaudit.core.escape import text_safe
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
    # through write_stdout: a full disk or a closed stdout is one message and exit code 2
    # (OutputError), as for the scan's reports; text_safe: an undecodable byte of a file
    # name or value (a lone surrogate) cannot be encoded
    if args.format == "json":
        write_stdout(text_safe(json.dumps(v, indent=2, ensure_ascii=False) + "\n"))
    else:
        write_stdout(text_safe(render_text(v)))
    return ExitCode.OK
