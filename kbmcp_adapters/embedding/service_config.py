"""The ``[embedding]`` keys of an embedding service: checked, and the identity they give an index.

``provider = "openai-compatible"`` sends text to a service the user runs (Ollama, llama.cpp's
server, vLLM, TEI) on ``POST {base_url}/embeddings`` (decision 0037). The index records
``ServiceConfig.identity``: the provider, both model names, both prefixes and the dimension,
so vectors of two set-ups never mix (``model_mismatch``). The API key is never a setting:
only the name of the environment variable that holds it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kbmcp_core.errors import ConfigError
from kbmcp_core.settings import Settings
from kbmcp_core.settings_keys import SCHEMA

LOCAL_PROVIDER = "local"
SERVICE_PROVIDER = "openai-compatible"
PROVIDERS = (LOCAL_PROVIDER, SERVICE_PROVIDER)
#: Settings fields only a service uses (their ``[embedding]`` key is the part after the
#: prefix): set without the provider, they are a mistake, not silently ignored.
SERVICE_FIELDS = ("embedding_base_url", "embedding_query_model", "embedding_document_model",
                  "embedding_query_prefix", "embedding_document_prefix", "embedding_dimension",
                  "embedding_max_input_chars", "embedding_timeout_s", "embedding_retries",
                  "embedding_api_key_env", "embedding_multilingual")
MAX_RETRIES = int(SCHEMA.by_field["embedding_retries"].high or 0)
MAX_DIMENSION = int(SCHEMA.by_field["embedding_dimension"].high or 0)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """An OpenAI-compatible embedding service, as configured (never the key itself)."""

    base_url: str
    document_model: str
    query_model: str
    dimension: int
    query_prefix: str = ""
    document_prefix: str = ""
    max_input_chars: int = 8192
    timeout_s: float = 60.0
    retries: int = 4
    batch_size: int = 32
    api_key_env: str | None = None
    #: the chunk size the index is cut to, in tokens of the default model's tokenizer
    window: int = 256
    #: the model reads Chinese, Japanese and Korean (``coverage``)
    multilingual: bool = False

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/embeddings"

    @property
    def identity(self) -> str:
        """What the index records as its model: everything that changes a vector."""
        parts = [f"{SERVICE_PROVIDER}:{self.document_model}"]
        if self.query_model != self.document_model:
            parts.append(f"query_model={self.query_model}")
        if self.document_prefix:
            parts.append(f"document_prefix={json.dumps(self.document_prefix)}")
        if self.query_prefix:
            parts.append(f"query_prefix={json.dumps(self.query_prefix)}")
        parts.append(f"dimension={self.dimension}")
        return ";".join(parts)


def _key(field: str) -> str:
    return "[embedding]." + field.removeprefix("embedding_").replace("model_cache_dir",
                                                                      "cache_dir")


def check_service_values(values: Mapping[str, Any]) -> None:
    """``ConfigError`` for an unknown provider, a service key without the provider, or a
    service missing ``base_url``, ``model`` or ``dimension`` (``values``: Settings fields)."""
    provider = values.get("embedding_provider", LOCAL_PROVIDER)
    if provider not in PROVIDERS:
        raise ConfigError(f"[embedding].provider must be one of "
                          f"{', '.join(repr(p) for p in PROVIDERS)}, got {provider!r}")
    given = [f for f in SERVICE_FIELDS if values.get(f) not in (None, "", False)]
    if provider == LOCAL_PROVIDER:
        if given:
            raise ConfigError(f"{_key(given[0])} is a key of an embedding service: set "
                              f'[embedding].provider = "{SERVICE_PROVIDER}" too, or remove it')
        return
    for field in ("embedding_base_url", "embedding_dimension"):
        if values.get(field) in (None, ""):
            raise ConfigError(f'[embedding].provider = "{SERVICE_PROVIDER}" needs {_key(field)}')
    if not (values.get("embedding_model") or values.get("embedding_document_model")):
        raise ConfigError(f'[embedding].provider = "{SERVICE_PROVIDER}" needs [embedding].model '
                          "(the name the service knows the model by)")
    check_base_url(str(values["embedding_base_url"]))
    SCHEMA.check({f: values.get(f) for f in SERVICE_FIELDS})  # the declared bounds
    timeout = values.get("embedding_timeout_s")
    if timeout is not None and not 0 < float(timeout) <= 3600:
        raise ConfigError(f"[embedding].timeout_s must be above 0 and at most 3600, got {timeout}")
    env = values.get("embedding_api_key_env")
    if env is not None and not _ENV_NAME.match(str(env)):
        raise ConfigError("[embedding].api_key_env must be the NAME of an environment "
                          "variable (letters, digits and _), not the key itself")


def check_base_url(url: str) -> str:
    """An http(s) URL with a host and no credentials, query or fragment."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"[embedding].base_url must be an http:// or https:// URL such as "
                          f"http://localhost:11434/v1, got {url!r}")
    if "@" in parts.netloc:
        raise ConfigError("[embedding].base_url must not carry credentials: name the "
                          "environment variable holding the key in [embedding].api_key_env")
    if parts.query or parts.fragment:
        raise ConfigError("[embedding].base_url takes no query or fragment: give the part "
                          "before /embeddings, e.g. http://localhost:11434/v1")
    return url.strip()


def service_config(settings: Settings) -> ServiceConfig | None:
    """The configured service, or None for an in-process model."""
    if settings.embedding_provider != SERVICE_PROVIDER:
        return None
    values = {f: getattr(settings, f) for f in (*SERVICE_FIELDS, "embedding_provider",
                                                   "embedding_model")}
    check_service_values(values)
    assert settings.embedding_base_url is not None and settings.embedding_dimension is not None
    document = settings.embedding_document_model or settings.embedding_model
    return ServiceConfig(
        base_url=check_base_url(settings.embedding_base_url),
        document_model=document,
        query_model=settings.embedding_query_model or document,
        dimension=settings.embedding_dimension,
        query_prefix=settings.embedding_query_prefix,
        document_prefix=settings.embedding_document_prefix,
        max_input_chars=settings.embedding_max_input_chars,
        timeout_s=float(settings.embedding_timeout_s),
        retries=settings.embedding_retries,
        batch_size=settings.embedding_batch_size,
        api_key_env=settings.embedding_api_key_env,
        window=max(256, settings.chunk_max_tokens or 0),
        multilingual=settings.embedding_multilingual,
    )


def configured_model(settings: Settings) -> str:
    """The model identity the settings ask for, without loading or calling anything."""
    service = service_config(settings)
    return service.identity if service is not None else settings.embedding_model


__all__ = ["LOCAL_PROVIDER", "PROVIDERS", "SERVICE_PROVIDER", "ServiceConfig",
           "check_base_url", "check_service_values", "configured_model", "service_config"]
