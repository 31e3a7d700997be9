"""Named sysctl.d cases (SEMANTICS §3.5) and what the real systemd-sysctl and procps leave
in the key each case is about (checked by ``test_conf_oracle.py``); shared by the oracle and
index tests."""

from __future__ import annotations

from tests.linux.sysctl import sysctl_oracle as so

R = "net/ipv4/conf/all/rp_filter"


NAMED: dict[str, so.Case] = {
    "same-basename-etc-wins": so.Case("n-etc-wins", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 60\nvm.dirty_ratio = 30\n",
        "/etc/sysctl.d/50-b.conf": "vm.swappiness = 10\n"}),
    "dev-null-mask": so.Case("n-devnull", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 60\n"},
        links={"/etc/sysctl.d/50-b.conf": "/dev/null"}),
    "empty-file-mask": so.Case("n-empty", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 60\n", "/etc/sysctl.d/50-b.conf": ""}),
    "run-masks-usr-lib": so.Case("n-run", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 60\n",
        "/run/sysctl.d/50-b.conf": "vm.swappiness = 20\n",
        "/usr/local/lib/sysctl.d/50-b.conf": "vm.swappiness = 30\n"}),
    "99-sysctl-link-present": so.Case("n-link", files={
        "/etc/sysctl.conf": "vm.swappiness = 5\n",
        "/usr/lib/sysctl.d/99-zz.conf": "vm.swappiness = 7\n"},
        links={"/etc/sysctl.d/99-sysctl.conf": "../sysctl.conf"}),
    "99-sysctl-link-absent": so.Case("n-nolink", files={
        "/etc/sysctl.conf": "vm.swappiness = 5\n",
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 7\n"}),
    "glob-vs-explicit-in-earlier-file": so.Case("n-glob", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.conf.all.rp_filter = 0\n",
        "/usr/lib/sysctl.d/50-v.conf": "net.ipv4.conf.*.rp_filter = 2\n"}),
    "dash-key-exclusion": so.Case("n-excl", files={
        "/etc/sysctl.d/10-x.conf": "-net.ipv4.conf.all.rp_filter\n",
        "/usr/lib/sysctl.d/50-v.conf": "net.ipv4.conf.*.rp_filter = 2\n"}),
    "dash-glob-exclusion-stops-nothing": so.Case("n-excl-glob", files={
        "/etc/sysctl.d/10-x.conf": "-net.ipv4.conf.a*.rp_filter\n",
        "/usr/lib/sysctl.d/50-v.conf": "net.ipv4.conf.*.rp_filter = 2\n"}),
    "dash-key-ignore-failure": so.Case("n-ignore", files={
        "/etc/sysctl.d/10-x.conf": "-vm.swappiness = 3\n-net.ipv4.no_such_key = 1\n"}),
    "slash-key-dotted-interface": so.Case("n-slash", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.conf.eth0/100.rp_filter = 1\n",
        "/etc/sysctl.d/20-y.conf": "net/ipv4/conf/eth0.100/rp_filter = 2\n"}),
    "semicolon-comment-and-no-equals": so.Case("n-comment", files={
        "/etc/sysctl.d/10-x.conf": "; vm.swappiness = 1\n# vm.swappiness = 2\nvm.swappiness\n"
                                   "vm.dirty_ratio 5\nvm.dirty_background_ratio = 4\n"}),
    "duplicate-key-later-basename-wins": so.Case("n-dup", files={
        "/etc/sysctl.d/90-late.conf": "vm.swappiness = 9\n",
        "/usr/lib/sysctl.d/10-early.conf": "vm.swappiness = 1\n"}),
    "value-with-spaces": so.Case("n-spaces", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.ip_local_port_range =  32768   60999  \n"}),
    "sysctl-conf-last-in-procps-only": so.Case("n-last", files={
        "/etc/sysctl.conf": "vm.swappiness = 5\n",
        "/etc/sysctl.d/zz-last.conf": "vm.swappiness = 50\n"},
        links={"/etc/sysctl.d/99-sysctl.conf": "../sysctl.conf"}),
    "dotfile-read-by-procps-only": so.Case("n-dot", files={
        "/etc/sysctl.d/.hidden.conf": "vm.swappiness = 11\n"}),
    "directory-named-conf-hides-vendor": so.Case("n-dir", files={
        "/usr/lib/sysctl.d/50-b.conf": "vm.swappiness = 7\n"},
        dirs=["/etc/sysctl.d/50-b.conf"]),
    "overlapping-globs-reassigned-moves-last": so.Case("n-glob-move", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.conf.*.rp_filter = 1\n"
                                   "net.ipv4.conf.a*.rp_filter = 2\n",
        "/etc/sysctl.d/20-y.conf": "net.ipv4.conf.*.rp_filter = 3\n"}),
    "overlapping-globs-same-value-keeps-place": so.Case("n-glob-keep", files={
        "/etc/sysctl.d/10-x.conf": "net.ipv4.conf.*.rp_filter = 1\n"
                                   "net.ipv4.conf.a*.rp_filter = 2\n",
        "/etc/sysctl.d/20-y.conf": "net.ipv4.conf.*.rp_filter = 1\n"}),
}


# expected (systemd, procps) values for the key that each named case is about
NAMED_EXPECT: dict[str, tuple[str, tuple[str | None, str | None]]] = {
    "same-basename-etc-wins": ("vm/swappiness", ("10", "10")),
    "dev-null-mask": ("vm/swappiness", (None, None)),
    "empty-file-mask": ("vm/swappiness", (None, None)),
    "run-masks-usr-lib": ("vm/swappiness", ("20", "20")),
    "99-sysctl-link-present": ("vm/swappiness", ("7", "5")),
    "99-sysctl-link-absent": ("vm/swappiness", ("7", "5")),
    "glob-vs-explicit-in-earlier-file": (R, ("0", "0")),
    "dash-key-exclusion": (R, (None, None)),
    # systemd 252 and procps 4.0.2 compare exclusions with the exact key only
    # (procps >= 4.0.5 matches them with fnmatch; see procps_decide)
    "dash-glob-exclusion-stops-nothing": (R, ("2", "2")),
    "dash-key-ignore-failure": ("vm/swappiness", ("3", "3")),
    "slash-key-dotted-interface": ("net/ipv4/conf/eth0.100/rp_filter", ("2", "2")),
    "semicolon-comment-and-no-equals": ("vm/swappiness", (None, None)),
    "duplicate-key-later-basename-wins": ("vm/swappiness", ("9", "9")),
    "value-with-spaces": ("net/ipv4/ip_local_port_range", ("32768   60999", "32768   60999")),
    "sysctl-conf-last-in-procps-only": ("vm/swappiness", ("50", "5")),
    "dotfile-read-by-procps-only": ("vm/swappiness", (None, "11")),
    # both programs fail to read the directory, and it still hides the vendor file
    "directory-named-conf-hides-vendor": ("vm/swappiness", (None, None)),
    # systemd: a re-assigned glob moves to the end of the ordered map; procps: last line
    "overlapping-globs-reassigned-moves-last": (R, ("3", "3")),
    # systemd keeps an identical re-assignment in its first place; procps: last line
    "overlapping-globs-same-value-keeps-place": (R, ("2", "1")),
}
