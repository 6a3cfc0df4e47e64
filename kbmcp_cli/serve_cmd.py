"""``kb-mcp serve``: run the MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbmcp_cli.options import config_default, kb_options, setup_logging

if TYPE_CHECKING:
    from kbmcp_adapters.mcp_server import BackgroundTask, KbRuntime
    from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier
    from kbmcp_core.settings import Settings

log = logging.getLogger("kbmcp_adapters.mcp_server")


@click.command()
@kb_options
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that starts kb-mcp itself; http for streamable HTTP at "
    "/mcp (plus /healthz).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="HTTP: address to listen on. Anything but a loopback address needs --allow-remote.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="HTTP: port to listen on (0 picks a free one and logs it).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="HTTP: allow a non-loopback --host. Refused unless a token exists (`kb-mcp token "
    "create`) or --insecure-no-auth is given; with --read-only a token is always needed.",
)
@click.option(
    "--insecure-no-auth",
    "--no-auth",
    "insecure_no_auth",
    is_flag=True,
    help="HTTP: serve with no token configured where one would be needed: on a "
    "non-loopback --host, or for a knowledge base that has had tokens (anywhere), so that "
    "anyone who can reach the port reads every document (logged as a warning at start). "
    "Not accepted with --read-only --allow-remote.",
)
@click.option(
    "--tokens-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="HTTP: the file of token hashes `kb-mcp token create` writes (default: "
    "[server].tokens_file of the config, else tokens.json in the index folder). Whenever "
    "it or --token-hashes holds a token, /mcp and /ui/api need one as `Authorization: "
    "Bearer TOKEN`, until the server stops. It must be a regular file of yours that "
    "nobody else can write.",
)
@click.option(
    "--token-hashes",
    envvar="KB_MCP_TOKEN_HASHES",
    show_envvar=True,
    default=None,
    metavar="HASHES",
    help="HTTP: more accepted token hashes, comma separated (as `kb-mcp token hash` "
    "prints them), e.g. for a container.",
)
@click.option(
    "--read-only",
    is_flag=True,
    help="Never write the index: no watcher, no index creation or migration, and "
    "rebuild_index is refused. Over HTTP the server is stateless (no sessions), so any "
    "number of replicas can serve one index behind a load balancer.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="HTTP: another host name clients may use (Host/Origin checks); repeatable. A bare "
    "name (kb.internal) is accepted on any port, as a load balancer forwards it; "
    "NAME:PORT only on that port.",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    metavar="ADDRESS",
    help="HTTP: a reverse proxy or load balancer (IP address or network, e.g. 10.0.0.0/24) "
    "whose X-Forwarded-For/-Proto/-Host headers are believed: the client address in the "
    "log and the Host checked come from them. Repeatable; adds to "
    "[server].trusted_proxies. From any other address they are ignored (default: none "
    "trusted, loopback included).",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="HTTP: longest wait for a request's whole body; a client that stalls gets 408 "
    "and its connection is closed. "
    + config_default("server_body_timeout_s"),
)
@click.option(
    "--session-idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="HTTP: a session with no request in flight for this long is closed; the client "
    "then starts a new one. Unused with --read-only (no sessions). "
    + config_default("server_session_idle_s"),
)
@click.option(
    "--max-sessions",
    type=click.IntRange(min=1),
    default=None,
    help="HTTP: sessions open at once; past it, a new session is answered 429 with "
    "Retry-After. Unused with --read-only (no sessions). "
    + config_default("server_max_sessions"),
)
@click.option(
    "--max-sessions-per-token",
    type=click.IntRange(min=1),
    default=None,
    help="HTTP: sessions one bearer token holds at once; a token that opens one more "
    "loses its idlest session (whose next request gets 404, so its client starts a new "
    "one). Unused with --read-only (no sessions). "
    + config_default("server_max_sessions_per_token"),
)
@click.option(
    "--max-sessions-per-client",
    type=click.IntRange(min=1),
    default=None,
    help="HTTP: sessions one client address holds at once, whatever its tokens; past it "
    "its idlest session is ended the same way. Behind a reverse proxy every client has "
    "the proxy's address unless it is a --trusted-proxy: raise it there. "
    + config_default("server_max_sessions_per_client"),
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="HTTP: longest wait for a request's headers, from its first byte (or from the "
    "connection); a client that has not sent them all gets 408 and is disconnected. "
    + config_default("server_header_timeout_s"),
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=None,
    help="HTTP: connections open at once in total (lowered to fit the open-file limit); past it a "
    "new connection is answered 503 and closed. "
    + config_default("server_max_connections"),
)
@click.option(
    "--max-connections-per-client",
    type=click.IntRange(min=1),
    default=None,
    help="HTTP: connections open at once from one client address; past it that client's "
    "new connections are answered 503. Behind a reverse proxy every client shares the "
    "proxy's address: raise it there. "
    + config_default("server_max_connections_per_client"),
)
@click.option(
    "--no-watch",
    is_flag=True,
    help="Do not watch the knowledge base for file changes while serving.",
)
@click.option(
    "--no-index",
    is_flag=True,
    help="Do not index at start: no missing index is built and no stale one brought up to "
    "date in the background (as [server].index_on_start = false); until `kb-mcp index` or "
    "the rebuild_index tool builds one, search and list_topics answer index_not_found.",
)
@click.option("--verbose", "-v", is_flag=True, help="Debug logging (on stderr).")
@click.option("--quiet", "-q", is_flag=True, help="Only errors on stderr.")
def serve(
    kb_path: Path | None,
    config: Path | None,
    transport: str,
    host: str,
    port: int,
    allow_remote: bool,
    insecure_no_auth: bool,
    tokens_file: Path | None,
    token_hashes: str | None,
    read_only: bool,
    allowed_hosts: tuple[str, ...],
    trusted_proxies: tuple[str, ...],
    body_timeout: float | None,
    session_idle_timeout: float | None,
    max_sessions: int | None,
    max_sessions_per_token: int | None,
    max_sessions_per_client: int | None,
    header_timeout: float | None,
    max_connections: int | None,
    max_connections_per_client: int | None,
    no_watch: bool,
    no_index: bool,
    verbose: bool,
    quiet: bool,
) -> None:
    """Serve the knowledge base to an MCP client.

    stdout carries only the MCP protocol; every log line goes to stderr. The index and
    the embedding model are opened on the first request that needs them, so the client's
    `initialize` is answered at once.

    Unless --read-only or --no-index, the server indexes in the background as it starts
    (the watcher's first sync, or one run with --no-watch): a missing index is built, a
    stale one brought up to date. Meanwhile search and list_topics answer "indexing: N of
    M files"; search answers by keywords once every file is read.

    Over HTTP, /mcp needs a bearer token whenever one is configured, and always beyond
    loopback (see `kb-mcp token`); /healthz stays open. Once a knowledge base has had
    tokens, it is never served without one unless --no-auth is given, loopback too.
    Started by systemd socket activation (LISTEN_FDS, as `kb-mcp service install --http`
    sets up), it serves the socket systemd passed, at that socket's address, instead of
    --host and --port.
    """
    from kbmcp_adapters.app.bootstrap import settings_for, store_of

    # A bad configuration fails here, before the process hands its stdout to the protocol.
    settings = settings_for(kb_path, config)
    from kbmcp_adapters.mcp_server.http_proxy import parse_trusted_proxies

    proxies = parse_trusted_proxies([*settings.server_trusted_proxies, *trusted_proxies])
    wire = None
    if transport == "stdio":
        from kbmcp_adapters.mcp_server.stdio import claim_stdout

        wire = claim_stdout()
    setup_logging(quiet=quiet, verbose=verbose)
    if not quiet and not verbose:
        log.setLevel(logging.INFO)

    from kbmcp_adapters.mcp_server.server import StopSignals

    # SIGINT and SIGTERM stop the server cleanly (exit 0), from here on
    signals = StopSignals()
    signals.install()
    index_on_start = settings.server_index_on_start and not no_index and not read_only
    verifier = None
    listening = None
    if transport == "http":
        verifier = token_verifier(settings, tokens_file, token_hashes)
        from kbmcp_adapters.mcp_server.had_tokens import tokens_stay_on

        tokens_stay_on(settings.kb_path, verifier, insecure_no_auth)  # decision 0047
        from kbmcp_adapters.mcp_server.socket_activation import inherited_socket

        # systemd's socket (`kb-mcp service install --http`): --host and --port give way
        listening = inherited_socket(os.environ, os.getpid())
    from kbmcp_adapters.mcp_server.host import open_host

    # one host for one folder or several collections (decisions 0042, 0051)
    served = open_host(settings, read_only=read_only, index_on_start=index_on_start)
    for name, each in served.runtimes.items():
        if each.settings.database_url is None and not each.settings.sqlite_path.exists():
            where = f"collection {name} has " if served.several else ""
            if index_on_start:
                log.info("%sno index yet at %s: building it in the background (search "
                         "answers by keywords once every file is read)", where,
                         each.settings.index_dir)
            else:
                log.warning("%sno index yet at %s: tools will ask for `kb-mcp index` (or the "
                            "rebuild_index tool) until one exists", where,
                            each.settings.index_dir)
        if store_of(each.settings).is_postgresql:
            reach_store(each)
    background: list[BackgroundTask] = [signals.stop_server]
    if read_only:
        log.info("read-only: this server never writes the index (no watcher, no local "
                 "search socket); its writer is `kb-mcp watch` or `kb-mcp index`")
    else:
        from kbmcp_adapters.local_search.serve_task import local_search_task

        # `kb-mcp search` asks this server over a local socket (decisions 0018, 0051)
        background.append(local_search_task)
    if not read_only and settings.watch and not no_watch:
        from kbmcp_adapters.live.serve_task import watch_task

        # one watcher per collection; its first sync is the start run (decision 0024)
        background += served.tasks(watch_task)
        if not verbose:
            logging.getLogger("watchfiles").setLevel(logging.WARNING)
    elif index_on_start:
        from kbmcp_adapters.mcp_server.start_run import start_index_task

        background += served.tasks(start_index_task)
    if transport == "http":
        from kbmcp_adapters.mcp_server.http import serve_http  # not loaded over stdio
        from kbmcp_adapters.mcp_server.http_limits import HttpLimits

        limits = HttpLimits.from_settings(
            settings, body_timeout_s=body_timeout, session_idle_s=session_idle_timeout,
            max_sessions=max_sessions, max_sessions_per_token=max_sessions_per_token,
            max_sessions_per_client=max_sessions_per_client, header_timeout_s=header_timeout,
            max_connections=max_connections,
            max_connections_per_client=max_connections_per_client)
        serve_http(
            served, host=host, port=port, allow_remote=allow_remote,
            extra_hosts=allowed_hosts, background=background, limits=limits,
            verifier=verifier, insecure_no_auth=insecure_no_auth, trusted_proxies=proxies,
            listening=listening,
        )
        log.info("stopped")
        return
    from kbmcp_adapters.mcp_server.server import serve_stdio

    serve_stdio(served, wire=wire, background=background)
    log.info("stopped")
    from kbmcp_adapters.mcp_server.server import end_process

    # The client closed stdin (or a signal came) and the index is closed: go now. A stdio
    # client gives its server a moment only; the interpreter's teardown takes longer.
    end_process()


def reach_store(runtime: KbRuntime) -> None:
    """A database server holding the index that cannot be reached stops ``serve`` at
    start, as it stops every other command (``StoreUnreachable``: one line, exit 1).
    Anything else (no index yet, an older schema) is for each request to report."""
    from kbmcp_core.errors import KbError, StoreUnreachable

    try:
        runtime.open_index()
    except StoreUnreachable:
        raise
    except KbError as exc:
        log.warning("%s", exc)


def token_verifier(
    settings: Settings, tokens_file: Path | None, token_hashes: str | None
) -> HashedTokenVerifier:
    """The tokens this server accepts: the tokens file (--tokens-file, else
    ``[server].tokens_file``, else tokens.json in the index folder) and the hashes given
    by --token-hashes / KB_MCP_TOKEN_HASHES; with ``[oauth].issuers``, JWT access tokens
    from those issuers too (decision 0054)."""
    from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier
    from kbmcp_adapters.mcp_server.oauth import OAuthVerifier, oauth_config
    from kbmcp_adapters.mcp_server.tokens import default_tokens_file, hashes_from_env

    path = tokens_file or default_tokens_file(settings)
    oauth = oauth_config(settings)
    if oauth is not None:
        return OAuthVerifier(path, hashes_from_env(token_hashes), oauth)
    return HashedTokenVerifier(path, hashes_from_env(token_hashes))
