"""sshd's configuration keywords: the table of ``servconf.c`` ``keywords[]`` (class, where
allowed, value type, compiled-in default, the release that added it) and the choice tables
of their values.

Apart from the parser (:mod:`aiaudit.linux.sshd.config`, which re-exports every name here)
so that a rule can tell whether a keyword exists, and which option it sets, without
importing the parser: a root without sshd then never loads it (7 M instructions).
"""

from __future__ import annotations

from typing import Mapping

from aiaudit.core.startup.records import record

FLAG = (("yes", "yes"), ("no", "no"))
"""Choice tables: (accepted spelling, canonical value), matched case-insensitively."""
PERMITROOTLOGIN = (("without-password", "prohibit-password"),
                   ("prohibit-password", "prohibit-password"),
                   ("forced-commands-only", "forced-commands-only"),
                   ("yes", "yes"), ("no", "no"))
ADDRESSFAMILY = (("inet", "inet"), ("inet6", "inet6"), ("any", "any"))
FORWARDING = (("yes", "yes"), ("all", "yes"), ("no", "no"), ("local", "local"),
              ("remote", "remote"))
GATEWAYPORTS = (("clientspecified", "clientspecified"), ("yes", "yes"), ("no", "no"))
COMPRESSION = (("yes", "yes"), ("delayed", "yes"), ("no", "no"))
PERMITTUNNEL = (("yes", "yes"), ("point-to-point", "point-to-point"),
                ("ethernet", "ethernet"), ("no", "no"))
IGNORERHOSTS = (("yes", "yes"), ("no", "no"), ("shosts-only", "shosts-only"))
LOGLEVEL = (("QUIET", "QUIET"), ("FATAL", "FATAL"), ("ERROR", "ERROR"), ("INFO", "INFO"),
            ("VERBOSE", "VERBOSE"), ("DEBUG", "DEBUG"), ("DEBUG1", "DEBUG"),
            ("DEBUG2", "DEBUG2"), ("DEBUG3", "DEBUG3"))
FACILITY = tuple((f, f) for f in ("DAEMON", "USER", "AUTH", "AUTHPRIV", "LOCAL0", "LOCAL1",
                                  "LOCAL2", "LOCAL3", "LOCAL4", "LOCAL5", "LOCAL6", "LOCAL7"))
FINGERPRINTHASH = (("md5", "MD5"), ("sha256", "SHA256"))

SCALAR = "scalar"
"""First obtained value wins (a list keyword takes its whole first line)."""
ACCUMULATE = "accumulate"
"""Every active line appends (in a matching ``Match`` the block's list replaces the
global one)."""
SPECIAL = "special"
"""``Match``, ``Include``; deprecated and unsupported keywords (accepted, ignored)."""


@record
class Keyword:
    """What sshd knows about one configuration keyword (``servconf.c`` ``keywords[]``)."""

    name: str
    """Canonical spelling (sshd_config(5))."""
    cls: str
    """:data:`SCALAR`, :data:`ACCUMULATE` or :data:`SPECIAL`."""
    match: bool
    """Allowed inside a ``Match`` block (``SSHCFG_MATCH``)."""
    vtype: str
    """Value type: ``choice``, ``int``, ``time``, ``port``, ``str`` (one argument), ``words``
    (one or more), ``userenv`` (yes, no or patterns), ``authmethods``, ``rest`` (the rest of
    the line), ``cmd`` (absolute path or ``none``, rest of the line), ``envname``,
    ``setenv``, ``subsystem``, ``listen``, ``ignore`` (deprecated: accepted, no effect)."""
    default: str | None = None
    """The compiled-in value as :func:`value` shows it (OpenSSH 9.x upstream; ``None``:
    unset)."""
    choices: tuple[tuple[str, str], ...] = ()
    option: str = ""
    """The option the keyword sets, when it is an alias (``ChallengeResponseAuthentication``
    sets ``KbdInteractiveAuthentication``); empty = itself."""
    note: str = ""
    since: tuple[int, int] = (0, 0)
    """The first OpenSSH release that knows the keyword (older ones refuse it as a "Bad
    configuration option")."""
    match_since: tuple[int, int] | None = None
    """For a keyword :attr:`match` says is global-only: the release from which it is
    allowed in a ``Match`` block too (``Subsystem``: 9.5)."""

    @property
    def opt(self) -> str:
        """Lower-case name of the option this keyword sets."""
        return (self.option or self.name).lower()


def _k(name: str, cls: str, match: bool, vtype: str, default: str | None = None,
       choices: tuple[tuple[str, str], ...] = (), option: str = "", note: str = "",
       since: tuple[int, int] = (0, 0), match_since: tuple[int, int] | None = None
       ) -> Keyword:
    return Keyword(name, cls, match, vtype, default, choices, option, note, since,
                   match_since)


_M, _G = True, False
PENALTIES_DEFAULT = ("crash:90 authfail:5 noauth:1 grace-exceeded:10 refuseconnection:10 "
                     "max:600 min:15 max-sources4:65536 max-sources6:65536 "
                     "overflow:permissive overflow6:permissive")
"""``PerSourcePenalties`` as ``sshd -T`` of 10.0p1 prints the compiled-in value (on by
default since 9.8)."""
_S, _A, _X = SCALAR, ACCUMULATE, SPECIAL

KEYWORD_LIST: tuple[Keyword, ...] = (
    # authentication
    _k("PermitRootLogin", _S, _M, "choice", "prohibit-password", PERMITROOTLOGIN),
    _k("PasswordAuthentication", _S, _M, "choice", "yes", FLAG),
    _k("KbdInteractiveAuthentication", _S, _M, "choice", "yes", FLAG),
    _k("ChallengeResponseAuthentication", _S, _M, "choice", None, FLAG,
       option="KbdInteractiveAuthentication", note="alias since OpenSSH 8.7"),
    _k("SkeyAuthentication", _S, _M, "choice", None, FLAG,
       option="KbdInteractiveAuthentication"),
    _k("PermitEmptyPasswords", _S, _M, "choice", "no", FLAG),
    _k("PubkeyAuthentication", _S, _M, "choice", "yes", FLAG),
    _k("DSAAuthentication", _S, _G, "choice", None, FLAG, option="PubkeyAuthentication"),
    _k("PubkeyAuthOptions", _S, _M, "words", "none"),
    _k("PubkeyAcceptedAlgorithms", _S, _M, "str"),
    _k("PubkeyAcceptedKeyTypes", _S, _M, "str", option="PubkeyAcceptedAlgorithms"),
    _k("HostbasedAuthentication", _S, _M, "choice", "no", FLAG),
    _k("HostbasedUsesNameFromPacketOnly", _S, _M, "choice", "no", FLAG),
    _k("HostbasedAcceptedAlgorithms", _S, _M, "str"),
    _k("HostbasedAcceptedKeyTypes", _S, _M, "str", option="HostbasedAcceptedAlgorithms"),
    _k("IgnoreRhosts", _S, _M, "choice", "yes", IGNORERHOSTS),
    _k("IgnoreUserKnownHosts", _S, _G, "choice", "no", FLAG),
    _k("KerberosAuthentication", _S, _M, "choice", "no", FLAG),
    _k("KerberosOrLocalPasswd", _S, _G, "choice", "yes", FLAG),
    _k("KerberosTicketCleanup", _S, _G, "choice", "yes", FLAG),
    _k("GSSAPIAuthentication", _S, _M, "choice", "no", FLAG),
    _k("GSSAPICleanupCredentials", _S, _G, "choice", "yes", FLAG),
    _k("GSSAPICleanupCreds", _S, _G, "choice", None, FLAG, option="GSSAPICleanupCredentials"),
    _k("GSSAPIStrictAcceptorCheck", _S, _G, "choice", "yes", FLAG),
    _k("GSSAPIKeyExchange", _S, _G, "choice", "no", FLAG, note="Debian GSSAPI patch"),
    _k("GSSAPIStoreCredentialsOnRekey", _S, _G, "choice", "no", FLAG,
       note="Debian GSSAPI patch"),
    _k("GSSAPIKexAlgorithms", _S, _G, "str", note="Debian GSSAPI patch"),
    _k("UsePAM", _S, _G, "choice", "no", FLAG),
    _k("AuthenticationMethods", _S, _M, "authmethods", "any"),
    _k("MaxAuthTries", _S, _M, "int", "6"),
    _k("MaxSessions", _S, _M, "int", "10"),
    _k("LoginGraceTime", _S, _G, "time", "120"),
    _k("AuthorizedKeysFile", _S, _M, "words", ".ssh/authorized_keys .ssh/authorized_keys2"),
    _k("AuthorizedKeysCommand", _S, _M, "cmd", "none"),
    _k("AuthorizedKeysCommandUser", _S, _M, "str", "none"),
    _k("AuthorizedPrincipalsFile", _S, _M, "str", "none"),
    _k("AuthorizedPrincipalsCommand", _S, _M, "cmd", "none"),
    _k("AuthorizedPrincipalsCommandUser", _S, _M, "str", "none"),
    _k("TrustedUserCAKeys", _S, _M, "str", "none"),
    _k("RevokedKeys", _S, _M, "str", "none"),
    _k("CASignatureAlgorithms", _S, _M, "str"),
    _k("RequiredRSASize", _S, _M, "int", "1024"),
    _k("SecurityKeyProvider", _S, _G, "str", "internal"),
    _k("ExposeAuthInfo", _S, _M, "choice", "no", FLAG),
    # access lists
    _k("AllowUsers", _A, _M, "words"),
    _k("DenyUsers", _A, _M, "words"),
    _k("AllowGroups", _A, _M, "words"),
    _k("DenyGroups", _A, _M, "words"),
    # forwarding and session
    _k("X11Forwarding", _S, _M, "choice", "no", FLAG),
    _k("X11DisplayOffset", _S, _M, "int", "10"),
    _k("X11UseLocalhost", _S, _M, "choice", "yes", FLAG),
    _k("XAuthLocation", _S, _G, "str", "/usr/bin/xauth"),
    _k("AllowTcpForwarding", _S, _M, "choice", "yes", FORWARDING),
    _k("AllowStreamLocalForwarding", _S, _M, "choice", "yes", FORWARDING),
    _k("AllowAgentForwarding", _S, _M, "choice", "yes", FLAG),
    _k("DisableForwarding", _S, _M, "choice", "no", FLAG),
    _k("GatewayPorts", _S, _M, "choice", "no", GATEWAYPORTS),
    _k("PermitOpen", _S, _M, "words", "any"),
    _k("PermitListen", _S, _M, "words", "any"),
    _k("PermitTunnel", _S, _M, "choice", "no", PERMITTUNNEL),
    _k("PermitTTY", _S, _M, "choice", "yes", FLAG),
    _k("PermitUserRC", _S, _M, "choice", "yes", FLAG),
    _k("PermitUserEnvironment", _S, _G, "userenv", "no"),
    _k("StreamLocalBindMask", _S, _M, "str", "0177"),
    _k("StreamLocalBindUnlink", _S, _M, "choice", "no", FLAG),
    _k("AcceptEnv", _A, _M, "envname"),
    _k("SetEnv", _S, _M, "setenv"),
    _k("ForceCommand", _S, _M, "rest", "none"),
    _k("ChrootDirectory", _S, _M, "str", "none"),
    _k("Banner", _S, _M, "str", "none"),
    _k("PrintMotd", _S, _G, "choice", "yes", FLAG),
    _k("PrintLastLog", _S, _G, "choice", "yes", FLAG),
    _k("Subsystem", _A, _G, "subsystem", match_since=(9, 5)),
    _k("ClientAliveInterval", _S, _M, "time", "0"),
    _k("ClientAliveCountMax", _S, _M, "int", "3"),
    _k("TCPKeepAlive", _S, _G, "choice", "yes", FLAG),
    _k("KeepAlive", _S, _G, "choice", None, FLAG, option="TCPKeepAlive"),
    _k("UnusedConnectionTimeout", _S, _M, "str", "none"),
    _k("ChannelTimeout", _S, _M, "words"),
    _k("IPQoS", _S, _M, "words"),
    _k("RekeyLimit", _S, _M, "words", "0 0"),
    _k("LogLevel", _S, _M, "choice", "INFO", LOGLEVEL),
    _k("LogVerbose", _S, _M, "words"),
    _k("SyslogFacility", _S, _G, "choice", "AUTH", FACILITY),
    # network and daemon
    _k("Port", _A, _G, "port"),
    _k("ListenAddress", _A, _G, "listen"),
    _k("AddressFamily", _S, _G, "choice", "any", ADDRESSFAMILY),
    _k("RDomain", _S, _M, "str"),
    _k("HostKey", _A, _G, "str"),
    _k("HostDSAKey", _A, _G, "str", option="HostKey"),
    _k("HostCertificate", _A, _G, "str"),
    _k("HostKeyAgent", _S, _G, "str", "none"),
    _k("HostKeyAlgorithms", _S, _G, "str"),
    _k("Ciphers", _S, _G, "str"),
    _k("MACs", _S, _G, "str"),
    _k("KexAlgorithms", _S, _G, "str"),
    _k("FingerprintHash", _S, _G, "choice", "SHA256", FINGERPRINTHASH),
    _k("PidFile", _S, _G, "str", "/run/sshd.pid"),
    _k("ModuliFile", _S, _G, "str", "/etc/ssh/moduli"),
    _k("StrictModes", _S, _G, "choice", "yes", FLAG),
    _k("Compression", _S, _G, "choice", "yes", COMPRESSION),
    _k("UseDNS", _S, _G, "choice", "no", FLAG),
    _k("MaxStartups", _S, _G, "maxstartups", "10:30:100"),
    _k("PerSourceMaxStartups", _S, _G, "str", "none"),
    _k("PerSourceNetBlockSize", _S, _G, "str", "32:128"),
    _k("VersionAddendum", _S, _G, "rest", "none"),
    _k("DebianBanner", _S, _G, "choice", "yes", FLAG, note="Debian patch"),
    # newer releases (the Debian changelog of openssh 1:10.0p1: 9.8 split sshd-session off
    # and added penalties, 9.9 RefuseConnection, 10.0 split sshd-auth off)
    _k("PAMServiceName", _S, _M, "str", "sshd", since=(9, 8)),
    _k("PerSourcePenalties", _S, _G, "words", PENALTIES_DEFAULT, since=(9, 8)),
    _k("PerSourcePenaltyExemptList", _S, _G, "str", "none", since=(9, 8)),
    _k("SshdSessionPath", _S, _G, "str", "/usr/lib/openssh/sshd-session", since=(9, 8)),
    _k("RefuseConnection", _S, _M, "choice", "no", FLAG, since=(9, 9)),
    _k("SshdAuthPath", _S, _G, "str", "/usr/lib/openssh/sshd-auth", since=(10, 0)),
    # structure
    _k("Match", _X, _M, "match"),
    _k("Include", _X, _M, "include"),
    # deprecated (logged and ignored) and unsupported (compiled out) keywords
    *(_k(n, _X, True, "ignore", note="deprecated") for n in (
        "RhostsRSAAuthentication", "RSAAuthentication", "AuthorizedKeysFile2")),
    *(_k(n, _X, False, "ignore", note="deprecated") for n in (
        "PAMAuthenticationViaKbdInt", "ServerKeyBits", "KeyRegenerationInterval",
        "RhostsAuthentication", "CheckMail", "PermitBlacklistedKeys", "UseLogin",
        "UsePrivilegeSeparation", "VerifyReverseMapping", "ReverseMappingCheck", "Protocol")),
    *(_k(n, _X, False, "ignore", note="unsupported") for n in (
        "KerberosGetAFSToken", "KerberosTgtPassing", "AFSTokenPassing", "GSSUseSessionCCache",
        "GSSAPIUseSessionCredCache")),
)
"""Every keyword OpenSSH 9.2p1 (Debian 12) and 10.0p1 (Debian 13) accept, with its class,
whether it may appear in a ``Match`` block (checked against ``sshd -t`` of both in the
tests), its value type, default and the release that added it (:attr:`Keyword.since`)."""

KEYWORDS: Mapping[str, Keyword] = {k.name.lower(): k for k in KEYWORD_LIST}
"""Keywords by lower-case name."""

OPTIONS: Mapping[str, Keyword] = {k.opt: KEYWORDS[k.opt] for k in KEYWORD_LIST
                                  if k.cls != SPECIAL}
"""The keyword that names each option (aliases resolved), by lower-case option name."""
