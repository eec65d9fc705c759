"""``picoora pair list|approve|refuse``: let in (or not) someone who wrote to the assistant on a channel.

An unknown sender gets a pairing code and nothing of their text reaches the model; the owner decides here,
from any shell, while the gateway runs.
"""

from __future__ import annotations

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, load_config


def register(app: typer.Typer) -> None:
    pair = typer.Typer(name="pair", help="Let people who wrote on a channel in, or refuse them.", no_args_is_help=True)
    pair.command("list")(list_)
    pair.command("approve")(approve)
    pair.command("refuse")(refuse)
    app.add_typer(pair)


def list_(ctx: typer.Context) -> None:
    """Open pairing requests (codes expire after an hour)."""
    from picoora.cli.opening import command_store
    from picoora.people import Pairing

    with command_store(load_config(ctx)) as store:
        pending = Pairing(store).pending()
    if not pending:
        print("No one is waiting.")
    for request in pending:
        who = f"@{request.username}" if request.username else request.sender_id
        print(f"{request.code}  {request.channel}  {who} (id {request.sender_id})  until {request.expires[:16]}Z")


def approve(
    ctx: typer.Context,
    code: str = typer.Argument(..., help="The code they were given."),
    name: str = typer.Option("", "--as", help="Their name (default: a guest of their own). Use the owner's "
                                               "name to let in another account of yours."),
) -> None:
    """Let them in: from now on they talk to the assistant with memories of their own."""
    from picoora.cli.opening import command_store
    from picoora.people import Pairing

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
    from picoora.people import Pairing

    with command_store(load_config(ctx)) as store:
        try:
            request = Pairing(store).refuse(code)
        except KeyError as err:
            raise CLIError(str(err.args[0])) from None
    print(f"Refused {request.channel} user {request.sender_id}.")
