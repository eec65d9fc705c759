"""``picoora gateway``: run the long-lived service (HTTP API, OpenAI-compatible endpoint, web chat).

FastAPI and uvicorn are imported inside the command, so ``picoora --help`` does not pay for them."""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, config_path, load_config

if TYPE_CHECKING:
    from picoora.config import Config


def register(app: typer.Typer) -> None:
    app.command("gateway")(gateway)


def gateway(
    ctx: typer.Context,
    host: str | None = typer.Option(None, "--host", help="Address to listen on (default: gateway.host, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", min=0, max=65535,
                                       help="Port (default: gateway.port, 18790; 0: any free port)."),
    print_systemd_unit: bool = typer.Option(False, "--print-systemd-unit",
                                            help="Print a systemd unit that runs this gateway, and exit."),
    user_unit: bool = typer.Option(False, "--user-unit",
                                   help="With --print-systemd-unit: a user unit (systemctl --user) instead of a "
                                        "system unit running as the current user."),
) -> None:
    """Run the gateway: HTTP API, OpenAI-compatible /v1/chat/completions and the web chat, until SIGTERM/Ctrl+C.

    Every endpoint but /health needs 'Authorization: Bearer <gateway.token>'; the web chat URL printed at
    start carries the token. Listening off loopback without a configured token is refused."""
    config = load_config(ctx)
    if print_systemd_unit:
        _print_unit(ctx, user_unit, host, port)
        return
    if host is not None:
        config.gateway.host = host
    if port is not None:
        config.gateway.port = port
    _require_extras(config)
    import asyncio
    import contextlib

    from picoora.gateway.binding import BindingRefused
    from picoora.gateway.server import banner, bind, close_unserved, open_gateway, serve, workspace_lock
    from picoora.llm.base import LLMError
    from picoora.store.base import StoreError

    try:
        sock = bind(config.gateway.host, config.gateway.port)
    except OSError as err:
        raise CLIError(f"cannot listen on {config.gateway.host}:{config.gateway.port}: {err.strerror or err}. "
                       "Is another gateway running? Pick another port with --port or gateway.port.") from None
    try:
        state = open_gateway(config, config_path=config_path(ctx))
    except BindingRefused as err:
        sock.close()
        raise CLIError(str(err), EXIT_USAGE) from None
    except (StoreError, LLMError) as err:
        sock.close()
        raise CLIError(str(err)) from None

    def started(server) -> None:  # noqa: ANN001 - GatewayServer, imported lazily
        # A one-off token must be shown to be of any use; a configured one only to a person at a terminal.
        show_token = state.one_off_token or sys.stdout.isatty()
        print("\n".join(banner(state, server.port, show_token=show_token)), flush=True)

    with contextlib.ExitStack() as held:
        try:  # one gateway per file workspace: a second one would run every job and channel twice
            held.enter_context(workspace_lock(state, sock.getsockname()[1]))
        except StoreError as err:
            sock.close()
            close_unserved(state)
            raise CLIError(str(err)) from None
        try:
            asyncio.run(serve(state, sock, started))
        except SystemExit:  # uvicorn ends a failed start-up (a service that cannot start) this way, after logging why
            raise CLIError("the gateway could not start (see the error above)") from None
    print("picoora gateway stopped.", flush=True)


def _require_extras(config: Config) -> None:
    """The gateway's web stack and each enabled channel's package, or one line naming the extra to install."""
    from picoora.extras import missing
    from picoora.gateway.channels import manifests

    needed = ["gateway"] + [m.extra for m in manifests() if m.extra and getattr(config.channels, m.name).enabled]
    problems = [problem for problem in map(missing, needed) if problem is not None]
    if problems:
        raise CLIError("; ".join(problems))


def _print_unit(ctx: typer.Context, user_unit: bool, host: str | None, port: int | None) -> None:
    import getpass

    from picoora.config import default_config_path, picoora_home
    from picoora.gateway.systemd import unit_text

    path = config_path(ctx) or default_config_path()
    try:
        text = unit_text(_executable(), str(picoora_home().resolve()), str(path.expanduser().resolve()),
                         None if user_unit else getpass.getuser(), host=host, port=port)
    except ValueError as err:
        raise CLIError(str(err), EXIT_USAGE) from None
    sys.stdout.write(text)


def _executable() -> str:
    """The ``picoora`` command as the user runs it (a ~/.local/bin link stays a link, so upgrades keep working)."""
    argv0 = sys.argv[0]
    if os.path.basename(argv0) == "picoora":
        return os.path.abspath(argv0)
    beside = os.path.join(os.path.dirname(sys.executable), "picoora")
    return shutil.which("picoora") or beside
