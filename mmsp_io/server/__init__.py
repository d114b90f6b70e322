"""The MMSP server (spec 07 §1-§5): one gateway holding the provider keys, speaking MMSP to
everything else.

``POST /v1/stream`` streams the public events of a configured model as SSE, ``GET /v1/models``
lists the served models and ``GET /v1/metrics`` counts what happened. The front doors
(``doors``, 08 D73) speak the protocols whose records have one, each at its own route:
``POST /v1/chat/completions``, ``POST /v1/responses`` and ``POST /v1/messages``, so the
official SDKs point at the gateway unchanged. Every other route is 404.
The request handling is one ``Gateway`` (``handler``) with two thin front ends: ``serve`` /
``run`` on the package's h11 core (``app``), and ``asgi_app`` for an ASGI server (``asgi``).
The configuration file and its validation are in ``config``. ``python -m mmsp_io serve
--config FILE`` runs it.

An application beside the client library (docs/architecture.md, "Applications beside the
library"): it calls its providers through ``AutoLLMClient``, the library never imports it, and
``import mmsp_io`` does not load it. It serves on ``mmsp_io.httpserver``, the h11 server core
it shares with the simulator and the trace page, which stays outside this package so that
they do not load the gateway.

::

    gateway = Gateway(load_config("server.json"))
    async with serve(gateway, port=25752) as server:
        ...  # clients reach server.url + "/v1"
"""

from .app import DEFAULT_GRACE, DEFAULT_HOST, DEFAULT_PORT, banner, run, serve
from .asgi import ASGIApp, asgi_app
from .config import ConfigError, ModelRow, ServerConfig, load_config, read_config, resolve_config
from .handler import DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE, MAX_BODY_BYTES, Gateway

__all__ = [
    "DEFAULT_GRACE",
    "DEFAULT_HOST",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_KEEPALIVE",
    "DEFAULT_PORT",
    "MAX_BODY_BYTES",
    "ASGIApp",
    "ConfigError",
    "Gateway",
    "ModelRow",
    "ServerConfig",
    "asgi_app",
    "banner",
    "load_config",
    "read_config",
    "resolve_config",
    "run",
    "serve",
]
