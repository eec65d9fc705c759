"""``picoora token create|list|revoke``: API tokens for the people of ``users``, for HTTP and MCP clients.

A person's token makes the gateway's API, OpenAI endpoint and ``/mcp`` act as that person (their memory,
sessions and the guests' tools); the gateway token keeps meaning the owner. Works while the gateway runs.
"""

from __future__ import annotations

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError, load_config


def register(app: typer.Typer) -> None:
    token = typer.Typer(name="token", help="API tokens for the people in config (users).", no_args_is_help=True)
    token.command("create")(create)
    token.command("list")(list_)
    token.command("revoke")(revoke)
    app.add_typer(token)


def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A person of `users` in config (or the owner)."),
    label: str = typer.Option("", "--label", help="What it is for, e.g. 'phone' or 'Open WebUI'."),
) -> None:
    """Make a token for NAME and print it once (only its hash is kept)."""
    from picoora.api_tokens import ApiTokens
    from picoora.cli.opening import command_store

    config = load_config(ctx)
    with command_store(config) as store:
        try:
            record, secret = ApiTokens(store, config).create(name, label)
        except ValueError as err:
            raise CLIError(str(err), EXIT_USAGE) from None
    print(secret)
    typer.echo(f"Token {record.id} for {record.person}: shown once, keep it now "
               "(clients send 'Authorization: Bearer <token>').", err=True)


def list_(ctx: typer.Context) -> None:
    """The tokens: id, person, label, created (never the tokens themselves)."""
    from picoora.api_tokens import ApiTokens
    from picoora.cli.opening import command_store

    config = load_config(ctx)
    with command_store(config) as store:
        records = ApiTokens(store, config).listed()
    if not records:
        print("No tokens yet: `picoora token create NAME` makes one.")
    for record in records:
        print(f"{record.id}  {record.person}  {record.created[:16]}Z  {record.label}".rstrip())


def revoke(ctx: typer.Context,
           token_id: str = typer.Argument(..., metavar="ID", help="As `token list` shows.")) -> None:
    """Revoke a token: the gateway refuses it from its next request on."""
    from picoora.api_tokens import ApiTokens
    from picoora.cli.opening import command_store

    config = load_config(ctx)
    with command_store(config) as store:
        try:
            record = ApiTokens(store, config).revoke(token_id)
        except KeyError as err:
            raise CLIError(str(err.args[0])) from None
    print(f"Revoked token {record.id} of {record.person}.")
