"""Which slurm.conf slurmd reads (:mod:`aiaudit.linux.slurm.slurmd`), against the real slurmd
where it is installed."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from aiaudit.linux.slurm import slurmd


@pytest.mark.slow
@pytest.mark.parametrize("argv,env,want", [
    (["-f", "{d}/flag.conf"], {"SLURM_CONF": "{d}/env.conf"}, "{d}/flag.conf"),
    ([], {"SLURM_CONF": "{d}/env.conf"}, "{d}/env.conf"),
    (["-f{d}/flag.conf"], {}, "{d}/flag.conf"),
])
def test_conf_order_matches_real_slurmd(tmp_path, argv, env, want) -> None:
    """The real slurmd names the file it tries to read when it is missing: the same one
    :func:`aiaudit.linux.slurm.slurmd.flag_value` / ``SLURM_CONF`` choose."""
    exe = shutil.which("slurmd") or "/usr/sbin/slurmd"
    if not os.access(exe, os.X_OK):
        if os.environ.get("CI") == "true":
            pytest.fail("slurmd is not installed")
        pytest.skip("slurmd is not installed")
    d = str(tmp_path)  # the files do not exist: slurmd reports the path and retries
    argv = [a.format(d=d) for a in argv]
    env = {k: v.format(d=d) for k, v in env.items()}
    proc = subprocess.Popen([exe, "-D", *argv], env={"PATH": "/usr/bin:/bin", **env},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
    finally:
        proc.kill()
        proc.wait()
    assert "cannot stat file" in line, line
    real = line.split("cannot stat file ", 1)[1].split(":", 1)[0]
    ours = slurmd.flag_value(argv) or env.get("SLURM_CONF")
    assert real == ours == want.format(d=d)


UNIT = "/etc/systemd/system/slurmd.service"


def choice(make_root, files: dict[str, str]) -> slurmd.ConfChoice:
    from aiaudit.core.host import Host

    host = Host(str(make_root({"/etc/slurm/slurm.conf": "", **files})), live=False)
    return slurmd.conf_choice(host)


def test_unit_environment_order(make_root) -> None:
    """``Environment=`` (an empty one resets), then ``EnvironmentFile=`` overriding it."""
    got = choice(make_root, {
        UNIT: "[Service]\nEnvironment=SLURM_CONF=/a/slurm.conf\nEnvironment=\n"
              "Environment=SLURM_CONF=/b/slurm.conf\nEnvironmentFile=-/etc/default/none\n"
              "ExecStart=/usr/sbin/slurmd -D\n"})
    assert got.path == "/b/slurm.conf" and got.evidence[0].source.endswith(":4")
    got = choice(make_root, {
        UNIT: "[Service]\nEnvironment=SLURM_CONF=/b/slurm.conf\n"
              "EnvironmentFile=/etc/default/slurmd\nExecStart=/usr/sbin/slurmd\n",
        "/etc/default/slurmd": "# comment\nexport SLURM_CONF='/c/slurm.conf'\n"})
    assert got.path == "/c/slurm.conf" and got.evidence[0].path == "/etc/default/slurmd"


def test_a_missing_required_environment_file_means_the_default_path(make_root) -> None:
    got = choice(make_root, {UNIT: "[Service]\nEnvironmentFile=/etc/default/gone\n"
                                   "ExecStart=/usr/sbin/slurmd -f /x/slurm.conf\n"})
    assert got.path == "/etc/slurm/slurm.conf"
    assert got.how == ("the default path (/etc/default/gone "
                       "(/etc/systemd/system/slurmd.service:2) is missing)")
