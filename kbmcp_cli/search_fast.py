"""``kb-mcp search`` before click: ask a running server, print its answer, exit (decision 0018).

``answer(argv)`` understands the plain spellings of the search command's options and
nothing more: for anything else (``--help``, a bad value, an unusual spelling, no server,
``--no-server``) it returns None and the click command runs as usual, which prints the
same output, the same errors, and asks the server the same way. Standard library only
(plus the settings reader and the socket client), so the answer costs little more than
the interpreter's start and the server's own search.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

#: ``typing`` costs this route milliseconds: type checkers see this.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from kbmcp_adapters.local_search.client import Reply
    from kbmcp_core.context import Context
    from kbmcp_core.settings import Settings

#: Set (to anything but "", "0", "false" or "no"), every search runs in its own process.
NO_SERVER_ENV = "KB_MCP_NO_SERVER"

#: option spelling -> (parameter, kind): "text", "int" (at least 1), "multi", a choice set
_OPTIONS: dict[str, tuple[str, object]] = {
    "--kb-path": ("kb_path", "path"),
    "--config": ("config", "path"),
    "--limit": ("limit", "int"),
    "-n": ("limit", "int"),
    "--format": ("fmt", frozenset({"json", "text"})),
    "--path-glob": ("path_globs", "multi"),
    "--tag": ("tags_any", "multi"),
    "--all-tags": ("tags_all", "multi"),
    "--date-from": ("date_from", "text"),
    "--date-to": ("date_to", "text"),
    "--category": ("category", "text"),
    "--topic": ("topic", "text"),
    "--chunks-per-document": ("chunks_per_document", "int"),
    "--collection": ("collection_names", "multi"),
    # search_request.MODES, spelled out: importing it would slow this route down
    "--mode": ("mode", frozenset({"hybrid", "vector", "lexical"})),
}
_FLAGS = {"--no-server": "no_server", "--verbose": "verbose", "-v": "verbose",
          "--explain": "explain"}
#: ``--color``/``--no-color``: the match marks (kbmcp_cli.highlight.use_color).
_COLOR_FLAGS = {"--color": True, "--no-color": False}


def parse(args: list[str]) -> dict[str, Any] | None:
    """The command's parameters from its arguments, or None for anything unusual."""
    got: dict[str, Any] = {"path_globs": [], "tags_any": [], "tags_all": [],
                           "collection_names": []}
    query: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if not _plain(arg):
            return None
        if not arg.startswith("-"):
            if query is not None:
                return None
            query = arg
        elif arg in _FLAGS:
            got[_FLAGS[arg]] = True
        elif arg in _COLOR_FLAGS:
            got["color"] = _COLOR_FLAGS[arg]
        else:
            name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            if name not in _OPTIONS:
                return None
            if not eq:
                i += 1
                if i == len(args):
                    return None
                value = args[i]
            if not value or value.startswith("-") or not _plain(value):
                return None
            key, kind = _OPTIONS[name]
            if kind == "int":
                if not (value.isascii() and value.isdigit()) or int(value) < 1:
                    return None
                got[key] = int(value)
            elif kind == "multi":
                got[key].append(value)
            elif isinstance(kind, frozenset):
                if value not in kind:
                    return None
                got[key] = value
            else:
                got[key] = Path(value) if kind == "path" else value
        i += 1
    if query is None:
        return None
    got["query"] = query
    return got


def _plain(text: str) -> bool:
    """No lone surrogates (undecodable bytes): those take the click route."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return text != "-"


def no_server_from_env() -> bool:
    return os.environ.get(NO_SERVER_ENV, "").strip().lower() not in ("", "0", "false", "no")


#: Parameters of the command that are not arguments of ``KnowledgeBase.search``.
CLI_ONLY = frozenset({"query", "kb_path", "config", "fmt", "no_server", "verbose", "color",
                      "collection_names"})


def scope(settings: Settings, names: Sequence[str], params: dict[str, Any]) -> bool:
    """Put in ``params`` the collections a search covers (decisions 0041, 0051): those
    ``--collection`` names (checked: an unknown name is ``UnknownCollection``), else the
    default ones of several; none for a collection of one named by no ``--collection`` (a
    plain folder, or one ``[[collections]]`` entry), whose search is one folder's. True
    when several are searched: each hit's path is then written ``collection:path``."""
    from kbmcp_core.collections import resolve_names, served_specs

    specs = served_specs(settings)
    if not names and len(specs) == 1:
        return False
    chosen = resolve_names(list(names) or None, [s.name for s in specs],
                           [s.name for s in specs if s.default])
    params["collection"] = list(chosen)
    return len(chosen) > 1


def search_params(got: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``KnowledgeBase.search`` for these command parameters:
    every option but the command line's own, left out when not given (so the search's
    defaults apply, ``search_request.resolve``, here or in the server), repeatable ones
    as tuples."""
    params: dict[str, Any] = {}
    for key, value in got.items():
        if key in CLI_ONLY or value is None:
            continue
        if isinstance(value, list | tuple):
            if not value:
                continue
            value = tuple(value)
        params[key] = value
    return params


#: index folder -> the reply of its server that did not answer this process's search
_declined: dict[str, Reply] = {}


def ask_server(settings: Settings, query: str, params: Mapping[str, Any]) -> Reply:
    """The server's reply; a server that did not answer this process's search already (on
    the route before click) is not asked again."""
    from kbmcp_adapters.local_search.client import ask

    earlier = _declined.get(str(settings.index_dir))
    return earlier or _remember(settings.index_dir, ask(settings, query, params))


def _remember(index_dir: Path, reply: Reply) -> Reply:
    if reply.response is None:
        _declined[str(index_dir)] = reply
    return reply


def render(response: Mapping[str, Any], fmt: str, color: bool | None = None, *,
           show_collection: bool = False) -> str:
    """What ``kb-mcp search`` prints for a response (``SearchResponse.as_dict()``), whoever
    searched: the MCP tool's JSON, or a numbered list with a marked snippet per hit (bold
    or ``⟦ ⟧`` marks: ``color`` is ``--color``/``--no-color``, None when not given);
    ``show_collection``: each path written ``collection:path`` (several were searched)."""
    if fmt == "json":
        return json.dumps(response, ensure_ascii=False, indent=2)
    from kbmcp_cli.highlight import context_lines, highlight_marks, snippet

    results = response["results"]
    lines = [] if results else ["no results"]
    marks = highlight_marks(color)
    for i, hit in enumerate(results, 1):
        page = hit.get("page")
        where = f"p.{page}" if page is not None else f"L{hit['start_line']}-{hit['end_line']}"
        heading = " > ".join(hit["heading_path"]) or hit["title"]
        path = (f"{hit['collection']}:{hit['path']}" if show_collection and hit.get("collection")
                else hit["path"])
        lines.append(f"{i}. {path} [{where}] {heading}  (score {hit['score']:.4f})")
        matches = [(int(start), int(end)) for start, end in hit.get("matches", ())]
        lines.append(f"   {snippet(hit['content'], matches, marks)}")
        if hit.get("context") is not None:
            lines.append(context_lines(_context(hit["context"])))
        if hit.get("explain") is not None:
            lines.append(f"   why: {_why(hit['explain'])}")
    if response.get("query_applied"):
        applied = response["query_applied"]
        lines.append(f"(query: phrases {applied['phrases']}, excluded {applied['excluded']})")
    if response.get("explain"):
        lines.append(f"(filters: {_filters(response['explain'])})")
    if response["low_confidence"]:
        lines.append("(low confidence: no clear match)")
    if response.get("notice"):
        lines.append(f"(notice: {response['notice']})")
    return "\n".join(lines)


def _why(explain: Mapping[str, Any]) -> str:
    """One hit's ``explain`` on one line: each leg's part, their sum, the reranker's say."""
    fusion = explain["fusion"]
    parts = []
    for leg, value in (("lexical", "score"), ("vector", "similarity")):
        found = explain.get(leg)
        seen = "not found" if found is None else f"#{found['rank']} {found[value]:.4f}"
        parts.append(f"{leg} {seen} \u00d7 {fusion[leg + '_weight']:.4f} "
                     f"= {fusion[leg + '_part']:.4f}")
    total = fusion["lexical_part"] + fusion["vector_part"]
    line = f"{' + '.join(parts)} -> {total:.4f} ({fusion['method']})"
    rerank = explain.get("rerank")
    if rerank is not None:
        line += (f"; rerank p={rerank['probability']:.3f} logit {rerank['logit']:.2f} "
                 f"trust {rerank['trust']:.2f} (fused #{rerank['fused_rank']})")
    return line


def _filters(explain: Mapping[str, Any]) -> str:
    """The response's ``explain``: what each filter removed, what was searched."""
    removed = [f"{f['filter']} -{f['removed_documents']} documents" for f in explain["filters"]]
    return ", ".join([*removed, f"searched {explain['searched_documents']} of "
                                f"{explain['documents']} documents"])


def _context(found: Mapping[str, Any]) -> Context:
    from kbmcp_core.context import Context

    return Context(kind=found["kind"], text=found["text"],
                   chunk_ids=tuple(found["chunk_ids"]), start_line=found.get("start_line"),
                   end_line=found.get("end_line"), start_page=found.get("start_page"),
                   end_page=found.get("end_page"), truncated=found["truncated"])


def answer(argv: list[str]) -> int | None:
    """Answer ``kb-mcp search ...`` through a server; the exit status, or None when the
    full command must run."""
    if not argv or argv[0] != "search" or no_server_from_env():
        return None
    got = parse(argv[1:])
    stdout = sys.stdout
    if got is None or got.get("no_server") or stdout is None or not _utf8(stdout.encoding):
        return None
    try:
        reply, config, several = _ask(got)
    except Exception:  # a bad configuration, a missing folder...: the click route reports it
        return None
    if reply.response is None:
        return None
    try:
        text = render(reply.response, got.get("fmt") or "text", got.get("color"),
                      show_collection=several)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if "\x1b" in text and not stdout.isatty() and got.get("color") is not True:
        return None  # click strips escapes from piped output unless --color asks for them
    if got.get("verbose"):
        print(f"kb-mcp: INFO: config: {config}", file=sys.stderr)
        print(f"kb-mcp: search: {reply.note}", file=sys.stderr, flush=True)
    stdout.write(text + "\n")
    stdout.flush()
    return 0


def _ask(got: Mapping[str, Any]) -> tuple[Reply, str, bool]:
    """Ask the server of the index these parameters name; its reply, the config file
    used and whether several collections were searched (each hit then names its own).
    With only --kb-path and no config file at all (none named, in the environment, in
    the knowledge base or in the user's config folder) and no --collection, the
    configuration is left to the server to read from the same inputs: this process then
    imports nothing but the socket client and the trust list's paths."""
    from kbmcp_adapters.app import trust
    from kbmcp_adapters.local_search import channel, client

    kb_path, config, cwd = got.get("kb_path"), got.get("config"), os.getcwd()
    if (config is None and kb_path is not None and not got["collection_names"]
            and not os.environ.get(trust.CONFIG_ENV)
            and not os.path.isfile(os.path.join(cwd, os.path.expanduser(kb_path),
                                                channel.CONFIG_FILE_NAME))
            and not (trust.user_config_dir() / trust.USER_CONFIG_NAME).is_file()):
        root = Path(kb_path).expanduser()
        if not root.is_dir():
            raise NotADirectoryError(str(root))
        index_dir = root.resolve() / channel.INDEX_DIR_NAME
        return _remember(index_dir, client.ask_with_inputs(
            index_dir, str(root.absolute()), cwd, got["query"], search_params(got))
        ), "no config file", False
    from kbmcp_adapters.app.config import build_settings

    settings = build_settings(config, kb_path=kb_path)
    params = search_params(got)
    several = scope(settings, got["collection_names"], params)  # one socket for all (0051)
    reply = ask_server(settings, got["query"], params)
    return reply, settings.config_origin.describe(), several


def _utf8(encoding: str | None) -> bool:
    try:
        return codecs.lookup(encoding or "").name == "utf-8"
    except LookupError:
        return False


__all__ = ["CLI_ONLY", "NO_SERVER_ENV", "answer", "ask_server", "no_server_from_env", "parse",
           "render", "scope", "search_params"]
