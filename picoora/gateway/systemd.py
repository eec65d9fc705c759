"""The systemd unit that runs ``picoora gateway`` as a service (what ``--print-systemd-unit`` prints).

A pure function of four inputs, so the unit the OCI deploy installs is exactly the one the installed
gateway prints, and a test can read every line. The sandboxing keeps the service to its own home:
the whole file system is read-only to it except ``PICOORA_HOME`` (config, workspace, store), it gets
a private /tmp and can never gain privileges. The ``exec`` tool's sandbox (bubblewrap) builds its own
namespaces and mounts a fresh /proc in them, so two hardening options are left out on purpose:
RestrictNamespaces= would forbid the namespaces, and ProtectKernelTunables= over-mounts /proc/sys,
after which the kernel refuses a new /proc to an unprivileged user namespace (measured: bwrap fails
with "Can't mount proc ... Operation not permitted").
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# useradd's rule (lower case, digits, _ and -, 32 characters), which systemd accepts as User=.
_USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_HOST = re.compile(r"[A-Za-z0-9.:_\[\]-]{1,253}")  # names, IPv4 and IPv6 addresses: no spaces or specifiers
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\"'\\%$]")


def unit_text(executable: str, picoora_home: str, config_path: str, user: str | None, *,
              host: str | None = None, port: int | None = None) -> str:
    """The unit file for ``executable gateway`` (with ``--host``/``--port`` when given, as on the command line).

    ``user`` names the account a system unit (``/etc/systemd/system``) runs as; ``None`` makes a
    user unit (``~/.config/systemd/user``, started by ``systemctl --user``). Paths must be absolute.
    Raises ValueError for anything that cannot be written safely into a unit file.
    """
    exe, home, config = (_absolute(name, value) for name, value in
                         (("executable", executable), ("PICOORA_HOME", picoora_home), ("config path", config_path)))
    if user is not None and not _USER_NAME.fullmatch(user):
        raise ValueError(f"not a valid user name for a systemd unit: {user!r}")
    service_user = [f"User={user}"] if user is not None else []
    listen = ""
    if host is not None:
        if not _HOST.fullmatch(host):
            raise ValueError(f"not a host name or address a unit file can hold: {host!r}")
        listen += f" --host {host}"
    if port is not None:
        if not 0 <= port <= 65535:
            raise ValueError(f"not a port: {port}")
        listen += f" --port {port}"
    lines = [
        "[Unit]",
        "Description=picoora gateway (HTTP API, web chat, channels, scheduler)",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=simple",
        *service_user,
        f"Environment={_quote('PICOORA_HOME=' + home)}",
        f"ExecStart={_quote(exe)} --config {_quote(config)} gateway{listen}",
        "Restart=on-failure",
        "RestartSec=5",
        "UMask=0077",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "ProtectSystem=strict",
        "ProtectHome=read-only",
        f"ReadWritePaths={_quote(home)}",
        "PrivateDevices=yes",
        "ProtectKernelModules=yes",
        "ProtectControlGroups=yes",
        "RestrictSUIDSGID=yes",
        "RestrictRealtime=yes",
        "LockPersonality=yes",
        "",
        "[Install]",
        f"WantedBy={'multi-user.target' if user is not None else 'default.target'}",
    ]
    return "\n".join(lines) + "\n"


def _absolute(name: str, value: str) -> str:
    # A line break would start a new directive; quotes, backslashes, % and $ are systemd syntax
    # (escapes, specifiers, variables) that no real install path needs, so refusing beats escaping.
    if _UNSAFE.search(value):
        raise ValueError(f"the {name} contains a character a unit file cannot hold safely: {value!r}")
    path = PurePosixPath(value)
    if not path.is_absolute():
        raise ValueError(f"the {name} must be an absolute path: {value!r}")
    return str(path)


def _quote(word: str) -> str:
    """One word for systemd: double-quoted when it holds a space (_UNSAFE already kept out the rest)."""
    return f'"{word}"' if " " in word else word
