"""The `devicelint server` command. Kept apart from the server itself so that listing the
commands (`devicelint --help`) never imports pygls, an optional dependency."""

from __future__ import annotations

import logging
import os
import sys
from typing import Optional

import click

# The CLI's exit code for errors. Not imported from devicelint.cli: the CLI imports this
# command, so this module stays below it.
EXIT_ERROR = 2


@click.command("server")
@click.option("--debounce-ms", type=click.IntRange(min=0), default=150, show_default=True,
              help="Wait this long after the last change before linting the buffer.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="warning", show_default=True, help="Log to stderr (or --log-file) at this level.")
@click.option("--log-file", type=click.Path(dir_okay=False), help="Write the log here instead of stderr.")
def server(debounce_ms: int, log_level: str, log_file: Optional[str]) -> None:
    """Run the language server (LSP) over stdin/stdout for editors. Needs the `server` extra:
    pip install 'devicelint[server]'. Setup for VS Code, Neovim, Helix and Emacs: docs/editors.md."""
    try:
        from devicelint.integrations.server import create_server
    except ImportError as error:
        click.echo(f"devicelint: error: `devicelint server` needs pygls ({error}); "
                   "install it with: pip install 'devicelint[server]'", err=True)
        sys.exit(EXIT_ERROR)
    if sys.stdin.isatty():
        click.echo("devicelint server: the language server, waiting for an editor to talk LSP on "
                   "stdin (Ctrl-D ends it). To lint a path named `server`, run "
                   "`devicelint check server`.", err=True)
    handler = logging.FileHandler(log_file, encoding="utf-8") if log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(level=log_level.upper(), handlers=[handler],
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # stdout carries the protocol: anything else printed there would corrupt it.
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    lsp = create_server(debounce_ms)
    lsp.start_io(sys.stdin.buffer, protocol_out)
    # LSP: exit code 0 after a `shutdown` request, 1 when told to exit (or cut off) without one.
    code = 0 if lsp.shutdown_requested else 1
    # Leave at once: tearing down the interpreter (the lint thread, libcst, the rules) takes
    # most of a second, and editors kill a server that lingers after `exit` (eglot does).
    logging.shutdown()
    for stream in (protocol_out, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # already closed by pygls
            pass
    os._exit(code)
