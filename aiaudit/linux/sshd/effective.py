"""The scanned root's sshd configuration, parsed once per run, and the value each keyword
takes for a connection (what ``sshd -T`` prints), with the release's compiled-in defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.packages.installed import dpkg_version
from aiaudit.linux.sshd.presence import MAIN_CONFIG, not_installed

if TYPE_CHECKING:
    from aiaudit.linux.sshd import config as sp


# ------------------------------------------------------------------ loading
@record
class Loaded:
    """The scanned root's sshd configuration, or why there is none."""

    config: sp.SshdConfig | None
    error: ParseError | None = None
    skip: str | None = None


def load_config(host: Host) -> Loaded:
    """Parse ``/etc/ssh/sshd_config`` and its includes once per run (through the Host, so
    ``Include`` paths are re-rooted under the scanned root)."""

    def factory() -> Loaded:
        if not host.lstat_exists(MAIN_CONFIG):
            skip = not_installed(host)
            if skip is not None:
                return Loaded(None, skip=skip)
            return Loaded(None, ParseError("openssh-server is installed but the file is "
                                           "missing: sshd will not start", source=MAIN_CONFIG))
        from aiaudit.linux.sshd import config as sp  # the parser: only where sshd is

        def read(path: str) -> str:
            # sshd fopen()s what the glob found: a link to /dev/null or a directory reads
            # as empty (observed with 9.2), a dangling link is fatal (NotFound below)
            if host.is_masked(path) or host.is_dir(path):
                return ""
            return host.read_text(path)

        try:
            return Loaded(sp.load(read, host.glob, **release_defaults(host)))
        except ParseError as exc:
            return Loaded(None, exc)

    return host.memo(("sshd-config",), factory)


class Passes:
    """The effective values of one parsed configuration, per connection class, computed
    once per run and shared by every SSH rule: the global values (no Match criteria: what
    ``sshd -T`` prints) and those of a connection matching exactly each Match block.

    Each needs one connection pass over every line (``SshdConfig.effective``); asked per
    rule and per block, 14 rules cost 3x one rule on 100 Include files.  A pass
    that sshd would refuse is remembered as its ParseError and raised again each time.
    """

    def __init__(self, config: sp.SshdConfig) -> None:
        self.config = config
        self._eff: dict[sp.MatchBlock | None, sp.Effective | ParseError] = {}

    def value(self, keyword: str, block: sp.MatchBlock | None = None) -> sp.Setting:
        """``config.value(keyword)`` (``block`` ``None``) or its value for a connection
        that matches exactly ``block`` (``config.value(keyword, lambda b: b == block)``)."""
        return self.effective(block).get(keyword)

    def effective(self, block: sp.MatchBlock | None = None) -> sp.Effective:
        """The shared :class:`~aiaudit.linux.sshd.config.Effective` behind :meth:`value`
        (computed once; a pass sshd would refuse raises its ParseError each time)."""
        eff = self._eff.get(block)
        if eff is None:
            try:
                eff = self.config.effective(None if block is None else _block_matcher(block))
            except ParseError as exc:
                eff = exc
            self._eff[block] = eff  # a racing rule computes the same value
        if isinstance(eff, ParseError):
            raise eff
        return eff


def passes(host: Host, config: sp.SshdConfig) -> Passes:
    """The run's shared :class:`Passes` of ``config`` (the memoised configuration)."""
    return host.memo(("sshd-passes", id(config)), lambda: Passes(config))


def release_defaults(host: Host) -> dict[str, Any]:
    """``load`` keywords for the compiled-in algorithm lists of the installed OpenSSH
    (its dpkg version; unknown: 9.2, and the note says so) and its release, which decides
    the keywords and Match criteria sshd knows (unknown: any)."""
    from aiaudit.linux.sshd import defaults as sshd_defaults

    full = dpkg_version(host, "openssh-server")
    defaults, note = sshd_defaults.for_package(full)
    out: dict[str, Any] = {"defaults": defaults, "defaults_note": note}
    out["release"], by_package = sshd_defaults.release(full)
    out["release_name"] = lambda: sshd_defaults.release_in_binary(host) or by_package
    if host.live:  # ListenAddress ... rdomain NAME needs a device NAME on this host
        out["netdev"] = lambda name: None if "/" in name else host.exists(
            f"/sys/class/net/{name}")
    return out


def effective_setting(host: Host, keyword: str) -> sp.Setting | None:
    """Effective value of any sshd keyword on the scanned host (what ``sshd -T`` prints),
    or ``None`` when sshd is absent or its configuration is invalid.  For other checks
    (e.g. ``UsePAM`` for the PAM session stack)."""
    loaded = load_config(host)
    if loaded.config is None:
        return None
    try:
        return passes(host, loaded.config).value(keyword)
    except ParseError:
        return None


def _block_matcher(block: sp.MatchBlock) -> Callable[[sp.MatchBlock], bool]:
    return lambda b: b == block
