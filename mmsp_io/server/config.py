"""The MMSP server's configuration file: reading, ``$ENV`` references, validation (spec 07 §2).

The file is JSON, ``{"models": [row, ...], "api_keys": [key, ...]}``. A row has ``model_id``
(the upstream id as ``AutoLLMClient`` takes it), ``api_key`` and ``server_model_id`` (the id
callers name), all required, and ``base_url`` and ``client_type``, optional (absent or empty:
the client's own default), and ``extra_body_keys``, the keys of a caller's ``extra_body`` the
row forwards (none when absent: the gateway refuses the others, ``handler``). A cell of
``base_url``, ``api_key`` or ``client_type``, and an entry of ``api_keys``, that starts with
``$`` is an environment reference, ``$NAME`` or ``${NAME}``; model ids are taken literally.
Every refusal is a ``ConfigError`` whose message names the file and the cell
(``models[2].api_key references $X, which is not set in the environment.``). Building each
row's client, the last check of 07 §2, is the gateway's (``mmsp_io.server.handler.Gateway``),
which names the row the same way.

Three optional objects tune the gateway:

- ``metrics``: ``{"show_errors": bool}``. ``GET /v1/metrics`` leaves out the error texts of
  failed calls unless ``show_errors`` is true (08 D75): every token holder reads the metrics,
  and an error text may tell one caller about another's request.
- ``remote_images``: ``{"enabled", "allow_private", "allow_hosts", "max_image_bytes",
  "max_total_bytes"}``, the rows' ``mmsp_io.RemoteImages``: which http(s) images a caller
  names are fetched for the client types that send images as bytes (08 D37). Absent, nothing
  is fetched (``GATEWAY_IMAGES``): a fetch is a request from the server's own network to an
  address any caller chooses. Enabled, private and loopback addresses are still refused unless
  ``allow_private`` is true or ``allow_hosts`` names the host.
- ``connections``: ``{"max", "head_timeout_s", "body_timeout_s"}``, the h11 front end's
  ``mmsp_io.httpserver.Limits``: connections open at once (one more is answered 503 and
  closed; absent, 1,000 or what the open-files limit leaves), and the seconds a request's head
  (or an idle keep-alive connection) and its body may take to arrive (30 and 60). Under an ASGI
  server these are that server's settings.

A key this module does not know is refused, at the top of the file (08 D75: a misspelt key
must never leave the server open), in those objects and in a row: a misspelt ``base_url``
would otherwise send the row's key to the vendor's default endpoint. ``host`` and ``port``
are known at the top: a playground saves them beside the configuration (07 §8); the server
does not read them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, final

import attrs

from ..remote_images import RemoteImages

__all__ = ["GATEWAY_IMAGES", "ConfigError", "ModelRow", "ServerConfig", "load_config",
           "read_config", "resolve_config"]

#: The keys of the file's top level (module doc).
_TOP_LEVEL: Final = ("models", "api_keys", "metrics", "remote_images", "connections", "host",
                     "port")
_REQUIRED: Final = ("model_id", "api_key", "server_model_id")
_OPTIONAL: Final = ("base_url", "client_type")
_LISTS: Final = ("extra_body_keys",)
_COLUMNS: Final = _REQUIRED + _OPTIONAL + _LISTS
_METRICS: Final = ("show_errors",)
#: ``connections`` keys and the ``httpserver.Limits`` fields they set.
_CONNECTIONS: Final = {"max": "max_connections", "head_timeout_s": "head_timeout",
                       "body_timeout_s": "body_timeout"}
#: What the gateway fetches of the images callers name when ``remote_images`` is absent:
#: nothing; once enabled, no private address unless allowed (module doc).
GATEWAY_IMAGES: Final = RemoteImages(enabled=False, allow_private=False)
_IMAGE_FLAGS: Final = ("enabled", "allow_private")
_IMAGE_LIMITS: Final = ("max_image_bytes", "max_total_bytes")
_IMAGE_KEYS: Final = (*_IMAGE_FLAGS, "allow_hosts", *_IMAGE_LIMITS)
#: The cells that may hold an environment reference (07 §2).
_REFERENCES: Final = frozenset({"base_url", "api_key", "client_type"})
_NAME: Final = r"[A-Za-z_][A-Za-z0-9_]*"
_REFERENCE: Final = re.compile(rf"\$(?:\{{(?P<braced>{_NAME})\}}|(?P<bare>{_NAME}))")


class ConfigError(ValueError):
    """A server configuration that cannot be served; the message names the cell at fault."""


_Fail = Callable[[str], ConfigError]


@final
@attrs.frozen
class ModelRow:
    """One model the server serves, its references resolved (07 §2)."""

    #: The id callers name in ``POST /v1/stream``.
    server_model_id: str
    #: The upstream model id, as ``AutoLLMClient`` takes it.
    model_id: str
    api_key: str = attrs.field(repr=False)
    #: ``None``: the client's default (its base-URL variable, else the vendor's endpoint).
    base_url: str | None = None
    #: ``None``: ``CLIENT_TYPE``, else routed by the model id.
    client_type: str | None = None
    #: The keys of a caller's ``extra_body`` forwarded to this row's client.
    extra_body_keys: tuple[str, ...] = ()


@final
@attrs.frozen
class ServerConfig:
    """A validated configuration: the rows in file order, the accepted bearer tokens and the
    gateway's settings (module doc)."""

    models: tuple[ModelRow, ...]
    #: Empty: an open server, every request accepted (07 §2).
    api_keys: tuple[str, ...] = attrs.field(default=(), repr=False)
    #: Where it was read from, named in the errors of later checks.
    source: str = ""
    #: ``metrics.show_errors``: whether ``GET /v1/metrics`` shows error texts (08 D75).
    show_errors: bool = False
    #: ``remote_images``: what the rows' clients fetch of the images callers name (08 D37).
    remote_images: RemoteImages = GATEWAY_IMAGES
    #: ``connections``: the ``httpserver.Limits`` fields it sets (module doc).
    connections: Mapping[str, int | float] = attrs.field(factory=dict)

    @property
    def open(self) -> bool:
        """Whether every request is accepted (no ``api_keys``)."""
        return not self.api_keys


def read_config(path: str | os.PathLike[str]) -> Any:
    """Return the configuration document at ``path`` as written (no reference resolved).

    Raises:
        ConfigError: the file cannot be read or is not JSON.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the server configuration: {exc}") from exc
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{path}: the server configuration is not JSON: {exc}") from exc


def load_config(
    path: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> ServerConfig:
    """Read, resolve and validate the configuration file at ``path`` (07 §2).

    ``environ`` is where references are looked up (``os.environ`` when ``None``).

    Raises:
        ConfigError: as ``read_config`` and ``resolve_config``.
    """
    return resolve_config(read_config(path), source=str(path), environ=environ)


def resolve_config(
    document: Any, source: str = "", environ: Mapping[str, str] | None = None
) -> ServerConfig:
    """Validate ``document`` and resolve its environment references (07 §2).

    Raises:
        ConfigError: a key is unknown (at the top, in a row, in ``metrics`` or
            ``remote_images``); ``models`` is not a non-empty list of objects; a required
            column is not a non-empty string; an optional column is not a string;
            ``extra_body_keys`` is not a list of non-empty strings; a ``server_model_id``
            repeats; ``api_keys`` is not a list of non-empty strings; a reference is
            malformed or names a variable that is unset or empty; ``metrics`` or
            ``remote_images`` is not an object of the values the module doc lists. The
            message names the cell.
    """
    env = os.environ if environ is None else environ

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{source}: {message}" if source else message)

    if not isinstance(document, Mapping):
        raise fail('the configuration must be a JSON object {"models": [...], "api_keys": [...]}.')
    _known(document, "the configuration", _TOP_LEVEL, fail)
    models = document.get("models")
    if not isinstance(models, list) or not models:
        raise fail("models must be a non-empty list of model rows.")
    rows: list[ModelRow] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(models):
        rows.append(_row(row, f"models[{index}]", env, fail))
        served = rows[-1].server_model_id
        if served in seen:
            raise fail(f"models[{index}].server_model_id {served!r} repeats "
                       f"models[{seen[served]}].server_model_id.")
        seen[served] = index
    keys = document.get("api_keys")
    if keys is None:
        keys = []
    if not isinstance(keys, list):
        raise fail("api_keys must be a list of non-empty strings.")
    tokens = []
    for index, key in enumerate(keys):
        cell = f"api_keys[{index}]"
        if not isinstance(key, str) or not key:
            raise fail(f"{cell} must be a non-empty string.")
        tokens.append(_resolve(key, cell, env, fail))
    metrics = _section(document, "metrics", _METRICS, fail)
    return ServerConfig(models=tuple(rows), api_keys=tuple(tokens), source=source,
                        show_errors=_flag(metrics, "metrics.show_errors", False, fail),
                        remote_images=_remote_images(document, fail),
                        connections=_connections(document, fail))


def _known(mapping: Mapping[Any, Any], where: str, keys: tuple[str, ...], fail: _Fail) -> None:
    """Refuse a key of ``mapping`` that is not one of ``keys``."""
    unknown = sorted(str(key) for key in mapping if key not in keys)
    if unknown:
        raise fail(f"{where} has unknown keys {unknown}; the keys are {', '.join(keys)}.")


def _section(
    document: Mapping[str, Any], name: str, keys: tuple[str, ...], fail: _Fail
) -> Mapping[str, Any]:
    """The optional object ``name`` of the file's top level (``{}`` when absent), its keys
    known."""
    section = document.get(name)
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise fail(f"{name} must be an object.")
    _known(section, name, keys, fail)
    return section


def _flag(section: Mapping[str, Any], cell: str, default: bool, fail: _Fail) -> bool:
    """The boolean ``cell`` (its last part is the key in ``section``), else ``default``."""
    value = section.get(cell.rpartition(".")[2], default)
    if not isinstance(value, bool):
        raise fail(f"{cell} must be true or false.")
    return value


def _strings(value: Any, cell: str, fail: _Fail) -> tuple[str, ...]:
    """A list of non-empty strings as a tuple (``()`` for ``None``)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise fail(f"{cell} must be a list of non-empty strings.")
    return tuple(value)


def _remote_images(document: Mapping[str, Any], fail: _Fail) -> RemoteImages:
    """The ``remote_images`` object over ``GATEWAY_IMAGES`` (module doc)."""
    section = _section(document, "remote_images", _IMAGE_KEYS, fail)
    settings: dict[str, Any] = {}
    for key in _IMAGE_FLAGS:
        cell = f"remote_images.{key}"
        settings[key] = _flag(section, cell, getattr(GATEWAY_IMAGES, key), fail)
    settings["allow_hosts"] = _strings(section.get("allow_hosts"), "remote_images.allow_hosts",
                                       fail)
    for key in _IMAGE_LIMITS:
        value = section.get(key, getattr(GATEWAY_IMAGES, key))
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise fail(f"remote_images.{key} must be a whole number of bytes, at least 1.")
        settings[key] = value
    return RemoteImages(**settings)


def _connections(document: Mapping[str, Any], fail: _Fail) -> dict[str, int | float]:
    """The ``connections`` object as ``httpserver.Limits`` fields (module doc)."""
    section = _section(document, "connections", tuple(_CONNECTIONS), fail)
    limits: dict[str, int | float] = {}
    for key, field in _CONNECTIONS.items():
        value = section.get(key)
        if value is None:
            continue
        whole = key == "max"
        if (isinstance(value, bool) or not isinstance(value, int if whole else int | float)
                or value <= 0):
            raise fail(f"connections.{key} must be a positive "
                       f"{'whole number' if whole else 'number of seconds'}.")
        limits[field] = value
    return limits


def _row(row: Any, where: str, env: Mapping[str, str], fail: _Fail) -> ModelRow:
    """One row read and resolved (``resolve_config``)."""
    if not isinstance(row, Mapping):
        raise fail(f"{where} must be an object.")
    unknown = sorted(str(key) for key in row if key not in _COLUMNS)
    if unknown:
        raise fail(f"{where} has unknown columns {unknown}; the columns are "
                   f"{', '.join(_COLUMNS)}.")
    cells: dict[str, str | None] = {}
    for column in _REQUIRED + _OPTIONAL:
        value = row.get(column)
        cell = f"{where}.{column}"
        if column in _REQUIRED and (not isinstance(value, str) or not value):
            raise fail(f"{cell} must be a non-empty string.")
        if value is not None and not isinstance(value, str):
            raise fail(f"{cell} must be a string.")
        if value and column in _REFERENCES:
            value = _resolve(value, cell, env, fail)
        cells[column] = value or None
    return ModelRow(
        server_model_id=str(cells["server_model_id"]),
        model_id=str(cells["model_id"]),
        api_key=str(cells["api_key"]),
        base_url=cells["base_url"],
        client_type=cells["client_type"],
        extra_body_keys=_strings(row.get("extra_body_keys"), f"{where}.extra_body_keys", fail),
    )


def _resolve(value: str, cell: str, env: Mapping[str, str], fail: _Fail) -> str:
    """``value``, or the variable it references when it starts with ``$`` (07 §2)."""
    if not value.startswith("$"):
        return value
    match = _REFERENCE.fullmatch(value)
    if match is None:
        raise fail(f"{cell} starts with $ but is not a reference $NAME or ${{NAME}}.")
    name = match["braced"] or match["bare"]
    resolved = env.get(name)
    if not resolved:
        raise fail(f"{cell} references ${name}, which is not set in the environment.")
    return resolved
