"""MCP prompts that teach a client to combine the tools: summarise, dig deep, catch up."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from kbmcp_core.models import DATE_PATTERN

MAX_ARGUMENT_CHARS = 2000
_DATE = re.compile(DATE_PATTERN)

CITE = (
    "Cite the path of every document you rely on, e.g. (guides/setup.md), with the heading "
    "or line range when a search hit gives one. Keep what the documents say apart from your "
    "own inference. If the knowledge base does not cover something, or search reports "
    "low_confidence, say so plainly instead of filling the gap from general knowledge."
)


@dataclass(frozen=True, slots=True)
class PromptSpec:
    name: str
    title: str
    description: str
    arguments: tuple[types.PromptArgument, ...]
    render: Callable[[Mapping[str, str]], str]

    def as_prompt(self) -> types.Prompt:
        return types.Prompt(
            name=self.name,
            title=self.title,
            description=self.description,
            arguments=list(self.arguments),
        )


def _summarize_topic(args: Mapping[str, str]) -> str:
    topic = args["topic"]
    return f"""Summarise what this knowledge base says about: {topic}

1. Call list_topics. If a topic group matches, read its kb://topic/ resource to see every
   document in it.
2. Call search with "{topic}" as the query (limit 10). When a group matched, narrow with
   path_globs (e.g. ["<prefix>/**"]); run one or two more searches with related terms.
3. Open the documents that matter most with get_document (or read their kb://doc/ uri)
   when a passage alone is not enough.
4. Write the summary: the main points, how they fit together, and what is still open or
   contradictory.

{CITE}"""


def _deep_dive(args: Mapping[str, str]) -> str:
    question = args["question"]
    return f"""Answer this question from the knowledge base, thoroughly: {question}

1. Call search with the question as written, then again with two or three rephrasings or
   its key terms; use filters (path_globs, tags_any, date_from/date_to) when the question
   names a place, a tag or a period.
2. For each promising hit, read the whole document with get_document so you see the
   passage in context; follow references to other documents the same way.
3. Check for documents that disagree, and for newer documents (the date field) that
   supersede older ones.
4. Answer, then list the sources you used.

{CITE}"""


def _whats_new(args: Mapping[str, str]) -> str:
    since = args.get("since")
    if since:
        window = f"since {since}"
        dated = (
            f'search with date_from="{since}" and broad queries (the names of the topic '
            "groups work well) to find documents dated on or after that day"
        )
    else:
        window = "recently"
        dated = (
            "search with broad queries (the names of the topic groups work well) and "
            "look at the date of each hit to find the newest documents"
        )
    return f"""Report what is new in this knowledge base {window}.

1. Call list_topics: it gives the topic groups, their document counts and when the index
   was last updated.
2. Call {dated}. Dates come from each document's frontmatter; documents without a date
   cannot be placed in time, so mention that they exist if they look relevant.
3. Read the documents that matter with get_document.
4. Report by topic, newest first, one or two sentences per document.

{CITE}"""


def _argument(name: str, description: str, required: bool) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=required)


PROMPTS: dict[str, PromptSpec] = {
    spec.name: spec
    for spec in (
        PromptSpec(
            "summarize_topic",
            "Summarise a topic",
            "Summarise what the knowledge base says about a topic, citing paths.",
            (_argument("topic", "The topic: a group name from list_topics or any subject.", True),),
            _summarize_topic,
        ),
        PromptSpec(
            "deep_dive",
            "Deep dive into a question",
            "Answer a question in depth from the knowledge base, citing every source.",
            (_argument("question", "The question to answer.", True),),
            _deep_dive,
        ),
        PromptSpec(
            "whats_new",
            "What's new",
            "What was added or changed in the knowledge base, optionally since a date.",
            (_argument("since", "Only documents dated on or after this day (YYYY-MM-DD).", False),),
            _whats_new,
        ),
    )
}


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[p.as_prompt() for p in PROMPTS.values()])


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    spec = PROMPTS.get(params.name)
    if spec is None:
        raise MCPError(
            types.INVALID_PARAMS,
            f"unknown prompt {params.name[:64]!r}; the prompts are {', '.join(PROMPTS)}",
        )
    args = check_prompt_arguments(spec, params.arguments or {})
    return types.GetPromptResult(
        description=spec.description,
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=spec.render(args)))
        ],
    )


def check_prompt_arguments(spec: PromptSpec, given: Mapping[str, str]) -> dict[str, str]:
    """Required arguments present and bounded; ``since`` a real date. Else INVALID_PARAMS."""
    known = {a.name for a in spec.arguments}
    unknown = sorted(set(given) - known)
    if unknown:
        raise MCPError(
            types.INVALID_PARAMS, f"unknown argument {unknown[0][:64]!r} for prompt {spec.name}"
        )
    out: dict[str, str] = {}
    for arg in spec.arguments:
        value = (given.get(arg.name) or "").strip()
        if not value:
            if arg.required:
                raise MCPError(types.INVALID_PARAMS, f"prompt {spec.name} needs {arg.name!r}")
            continue
        if len(value) > MAX_ARGUMENT_CHARS:
            raise MCPError(
                types.INVALID_PARAMS,
                f"{arg.name!r} is {len(value)} characters long; the limit is {MAX_ARGUMENT_CHARS}",
            )
        if arg.name == "since":
            _check_date(value)
        out[arg.name] = value
    return out


def _check_date(value: str) -> None:
    try:
        if not _DATE.match(value):
            raise ValueError
        date.fromisoformat(value)
    except ValueError:
        raise MCPError(types.INVALID_PARAMS, "'since' must be a date as YYYY-MM-DD") from None
