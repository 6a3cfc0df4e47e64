"""One search answer over several collections' knowledge bases (decision 0041).

With one knowledge base the answer is that knowledge base's own, each hit marked with
its collection; with several, ``kbmcp_core.joint_search`` lets the search use-case run
once over all of them, so both legs are fused on comparable scores and every option
(filters, exclusions, fields, limit, explain, rerank, low_confidence) behaves as for one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kbmcp_core.errors import IndexNotFound
from kbmcp_core.joint_search import Part, joint_view, local_id, qualify, split
from kbmcp_core.search import SearchHit, SearchResponse
from kbmcp_core.search_request import SearchRequest, needs_embedder
from kbmcp_core.uris import doc_uri

if TYPE_CHECKING:
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

__all__ = ["search_collections"]


def search_collections(kbs: Mapping[str, KnowledgeBase], query: str, *,
                       qualify_uris: bool | None = None, **search_args: Any
                       ) -> SearchResponse:
    """Search the knowledge bases ``kbs`` (collection name → knowledge base) as one.

    ``search_args``: what ``KnowledgeBase.search`` takes. Hits carry their collection;
    their ``uri`` is ``kb://doc/<collection>/<path>`` when ``qualify_uris`` (by default:
    when several collections are searched), else ``kb://doc/<path>``. A collection whose
    index is missing or not ready yet is left out with a notice naming it, unless none is
    ready: then the first one's ``IndexNotFound``/``IndexNotReady`` is raised.
    """
    if not kbs:
        raise ValueError("search_collections needs at least one knowledge base")
    qualified = len(kbs) > 1 if qualify_uris is None else qualify_uris
    if len(kbs) == 1:
        ((name, kb),) = kbs.items()
        return _tagged(kb.search(query, **search_args), qualified, lambda h: (name, h))
    ready = {name: kb for name, kb in kbs.items() if _ready(kb)}
    if not ready:  # the honest error of the first one
        next(iter(kbs.values())).search(query, **search_args)
    left_out = [name for name in kbs if name not in ready]
    if len(ready) == 1:
        ((name, kb),) = ready.items()
        response = _tagged(kb.search(query, **search_args), qualified, lambda h: (name, h))
    else:
        response = _joint(ready, query, qualified, search_args)
    if left_out:
        note = ("not searched, no index run has finished there yet: "
                f"{', '.join(left_out)}")
        response = replace(response, notice="; ".join(filter(None, [response.notice, note])))
    return response


def _ready(kb: KnowledgeBase) -> bool:
    try:
        return kb.is_ready()
    except IndexNotFound:
        return False


def _joint(kbs: Mapping[str, KnowledgeBase], query: str, qualified: bool,
           search_args: Mapping[str, Any]) -> SearchResponse:
    embeds = needs_embedder(search_args.get("mode"))
    searchers = {name: kb.searcher(embeds=embeds) for name, kb in kbs.items()}
    parts = [Part(name, s.store, s.vectors, s.embedder, s.rules, s.embedder.model_id)
             for name, s in searchers.items()]
    # the first collection's searcher with the joint view as its ports: every other knob
    # (defaults, fusion, reranker...) is the top-level settings', the same in each
    joint = copy.copy(next(iter(searchers.values())))
    with joint_view(parts) as view:  # its threads stop when the search is done
        joint.store, joint.vectors, joint.embedder, joint.rules = (
            view.store, view.vectors, view.embedder, view.rules)
        response = joint.search(SearchRequest.of(query, **search_args))
    n = len(parts)

    def untangle(hit: SearchHit) -> tuple[str, SearchHit]:
        name, path = split(hit.path)
        return name, replace(hit, path=path, chunk_id=local_id(hit.chunk_id, n))

    return _tagged(response, qualified, untangle)


def _tagged(response: SearchResponse, qualified: bool,
            untangle: Callable[[SearchHit], tuple[str, SearchHit]]) -> SearchResponse:
    """Each hit with its collection, and its URI with or without it."""
    hits = []
    for hit in response.results:
        name, hit = untangle(hit)
        uri = hit.uri
        if uri is not None:
            uri = doc_uri(qualify(name, hit.path) if qualified else hit.path)
        hits.append(replace(hit, collection=name, uri=uri))
    return replace(response, results=tuple(hits))
