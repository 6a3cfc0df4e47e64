"""Service set-up: systemd units that run ``kb-mcp serve`` (socket-activated) or
``kb-mcp watch`` for one knowledge base (``kb-mcp service``; decision 0049)."""

from __future__ import annotations

from kbmcp_adapters.service.units import Listen, ServicePlan, service_unit, socket_unit

__all__ = ["Listen", "ServicePlan", "service_unit", "socket_unit"]
