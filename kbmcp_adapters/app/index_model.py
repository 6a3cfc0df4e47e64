"""Which embedding model a knowledge base runs: the one rule for an index that already
records a model while the config names none (decision 0046).

The default model changed (the integer copy of MiniLM, decision 0046). An index built
before with the packaged file records that model; a config that names no model must not
turn it into a ``ModelMismatch`` or re-embed it. So when the settings came from a config
that names no model (``Settings.embedding_model_follows_index``), the model is the one the
index records, read without creating or upgrading anything; an index that records none, or
does not exist yet, gets the default. Only the two MiniLM identities are kept this way:
an index of another model needs that model configured, as before. A model named in the
config (or passed by the library caller) is used as it is: a different recorded model
stays ``ModelMismatch``.
``kb-mcp index --force`` rebuilds from nothing, so it takes the default (``for_rebuild``).

Each collection's index decides for itself (its own settings, its own store); a
PostgreSQL index answers from its own schema's meta; a read-only replica reads what the
index records and creates nothing.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from kbmcp_adapters.embedding.catalogue_files import DEFAULT_MODEL_ID, PACKAGED_MODEL_ID
from kbmcp_core.errors import KbError
from kbmcp_core.meta_keys import META_MODEL
from kbmcp_core.ports import IndexMeta
from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

#: The models an index may keep without the config naming them: the default before and
#: after 0046. An index of any other model (a packaged or catalogue model, an embedding
#: service) needs it configured, as before: else ``ModelMismatch`` names the remedy.
_MINILM = frozenset({PACKAGED_MODEL_ID, DEFAULT_MODEL_ID})

__all__ = ["for_rebuild", "model_note", "recorded_model", "resolve_model"]


def recorded_model(settings: Settings, store: IndexMeta | None = None) -> str | None:
    """The model the index at ``settings`` records (from ``store`` when given), or None
    when there is no index or it records none. Nothing is created, migrated or locked; an
    index that cannot be read now answers None (opening it later reports why)."""
    if store is not None:
        try:
            return store.get_meta(META_MODEL)
        except KbError:
            return None
    from kbmcp_adapters.store.sql_store import SqlIndexStore

    try:
        opened = SqlIndexStore(settings.store_url, create=False, migrate_schema=False,
                               read_only=settings.read_only)
    except KbError:  # no index yet (IndexNotFound), or not reachable now
        return None
    try:
        return opened.get_meta(META_MODEL)
    except KbError as exc:  # e.g. a PostgreSQL schema with no tables yet
        log.debug("the index's model could not be read: %s", exc)
        return None
    finally:
        opened.close()


def resolve_model(settings: Settings, store: IndexMeta | None = None,
                  given: str | None = None) -> Settings:
    """``settings`` with the model this knowledge base runs: the index's recorded model
    when the config named none, else ``settings`` unchanged. ``given``: the model of an
    embedder the caller hands over (a library program, the tests); with no model
    configured and none recorded yet, the index will record that one, so the settings
    name it too (one of the two MiniLM identities; another needs configuring)."""
    if not settings.embedding_model_follows_index:
        return settings
    recorded = recorded_model(settings, store)
    if recorded is None and given in _MINILM:
        recorded = given
    if recorded is None or recorded == settings.embedding_model or recorded not in _MINILM:
        return settings  # another model (an embedding service's too) must be configured
    return replace(settings, embedding_model=recorded)


def for_rebuild(settings: Settings) -> Settings:
    """The settings a rebuild from nothing (``--force``) embeds with: the configured model,
    which is the default when the config names none."""
    if not settings.embedding_model_follows_index:
        return settings
    default = Settings.__dataclass_fields__["embedding_model"].default
    return replace(settings, embedding_model=str(default))


def model_note(settings: Settings) -> str | None:
    """What ``status`` adds after the model when it was kept from the index rather than
    configured, e.g. "recorded by the index; the default for new indexes is X"."""
    default = str(Settings.__dataclass_fields__["embedding_model"].default)
    if not settings.embedding_model_follows_index or settings.embedding_model == default:
        return None
    return (f"recorded by the index; the default for new indexes is {default}, which "
            "`kb-mcp index --force` re-embeds with")
