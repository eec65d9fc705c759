"""``picoora pair list|approve|refuse|revoke``: let in (or not) someone who wrote to the assistant on a channel,
and see or take back who has access.

An unknown sender gets a pairing code and nothing of their text reaches the model; the owner decides here,
from any shell, while the gateway runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, load_config

if TYPE_CHECKING:
    from picoora.config import Config


def register(app: typer.Typer) -> None:
    pair = typer.Typer(name="pair", help="Let people who wrote on a channel in, refuse them, list or revoke access.",
                       no_args_is_help=True)
    pair.command("list")(list_)
    pair.command("approve")(approve)
    pair.command("refuse")(refuse)
    pair.command("revoke")(revoke)
    app.add_typer(pair)


def list_(ctx: typer.Context) -> None:
    """Who is waiting (codes expire after an hour) and who has access: approved here, or named in the config."""
    from picoora.cli.opening import command_store
    from picoora.identities import Pairing

    config = load_config(ctx)
    with command_store(config) as store:
        pairing = Pairing(store)
        pending, approved = pairing.pending(), pairing.approved()
    print("Waiting:" if pending else "No one is waiting.")
    for request in pending:
        who = f"@{request.username}" if request.username else request.sender_id
        print(f"  {request.code}  {request.channel}  {who} (id {request.sender_id})  until {request.expires[:16]}Z")
    configured = [(identity, user.name) for user in config.users for identity in user.identities]
    allowed = _allow_from(config)
    print("With access:" if approved or configured or allowed else
          "No one has access through pairing, the config's users or a channel's allow_from.")
    for identity, person in approved.items():
        print(f"  {identity}  as {person}  (approved; `picoora pair revoke {identity}` takes it back)")
    for identity, person in configured:
        print(f"  {identity}  as {person}  (config users; edit the config to change)")
    for identity, how in allowed:
        print(f"  {identity}  {how}")


def _allow_from(config: Config) -> list[tuple[str, str]]:
    """(identity, as whom) for each id in an enabled or configured channel's ``allow_from`` (migrated from
    the Go version, or written by hand): the owner, unless a person claims it; everyone for ``*``."""
    from picoora.gateway.channels import CHANNELS

    found = []
    for channel in CHANNELS:
        for entry in getattr(config.channels, channel).allow_from:
            anywhere = " from any workspace" if channel == "slack" and _bare_user_id(entry) else ""
            how = ("everyone, each as a guest of their own" if entry == "*" else
                   f"as the owner{anywhere} unless a person claims it (channels.{channel}.allow_from)")
            found.append((f"{channel}:{entry}", how))
    return found


def _bare_user_id(entry: str) -> bool:
    return entry not in ("*", "") and ":" not in entry and not entry.startswith("@")


def approve(
    ctx: typer.Context,
    code: str = typer.Argument(..., help="The code they were given."),
    name: str = typer.Option("", "--as", help="Their name (default: a guest of their own). Use the owner's "
                                               "name to let in another account of yours."),
) -> None:
    """Let them in: from now on they talk to the assistant with memories of their own."""
    from picoora.cli.opening import command_store
    from picoora.identities import Pairing

    with command_store(load_config(ctx)) as store:
        try:
            person = Pairing(store).approve(code, name)
        except KeyError as err:
            raise CLIError(str(err.args[0])) from None
        except ValueError as err:
            raise CLIError(str(err), EXIT_USAGE) from None
    print(f"Approved: they talk to the assistant as {person.name}.")


def refuse(ctx: typer.Context, code: str = typer.Argument(...)) -> None:
    """Refuse them (their code stops working; a new message gets a new code)."""
    from picoora.cli.opening import command_store
    from picoora.identities import Pairing

    with command_store(load_config(ctx)) as store:
        try:
            request = Pairing(store).refuse(code)
        except KeyError as err:
            raise CLIError(str(err.args[0])) from None
    print(f"Refused {request.channel} user {request.sender_id}.")


def revoke(
    ctx: typer.Context,
    who: str = typer.Argument(..., help="An identity from `picoora pair list` (telegram:123) or a person's name "
                                        "(all their identities)."),
) -> None:
    """Take back access given with `pair approve` (their memories are kept; a new message gets a new code)."""
    from picoora.cli.opening import command_store
    from picoora.identities import Pairing

    with command_store(load_config(ctx)) as store:
        gone = Pairing(store).revoke(who.strip())
    if not gone:
        raise CLIError(f"no approved access for {who!r}: `picoora pair list` shows who has it")
    for identity, person in gone.items():
        print(f"Revoked {identity} (was {person}).")
