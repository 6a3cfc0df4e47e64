"""Service set-up: systemd units that run ``kb-mcp serve`` (socket-activated) or
``kb-mcp watch`` for one knowledge base (``kb-mcp service``; decision 0049). Each name
is imported on first use (``kbmcp_core.lazy``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbmcp_core.lazy import lazy_names

if TYPE_CHECKING:
    from kbmcp_adapters.service.units import Listen, ServicePlan, service_unit, socket_unit

__all__ = ["Listen", "ServicePlan", "service_unit", "socket_unit"]

__getattr__ = lazy_names(__name__, {name: "kbmcp_adapters.service.units" for name in __all__})
