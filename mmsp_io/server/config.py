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

Rows sharing a ``server_model_id`` form a *group* (08 D77, which lifts 07 §2's uniqueness rule
for groups): a request is served by one of them, the next one tried when a row fails with a
retryable error before its first public event (``mmsp_io.server.failover``). Two more columns
tune it: ``weight`` (a number above 0) makes the group's order a weighted pick, every row
without one weighing 1 (no row of the group with a ``weight``: file order), and
``cooldown_s`` (at least 0; 30 when absent) is how long a row that failed so is passed over.
Two rows of a group that are the same in every column are refused: the second would add
nothing but a retry.

Four optional objects tune the gateway:

- ``metrics``: ``{"show_errors": bool, "token": str}``. ``GET /v1/metrics`` leaves out the
  error texts of failed calls unless ``show_errors`` is true (08 D75): every token holder reads
  the metrics, and an error text may tell one caller about another's request. ``token`` (may
  be an environment reference) is the bearer token of ``GET /metrics`` on a server listening
  at a non-loopback address (``health``).
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
- ``telemetry``: ``{"enabled": bool, "record_content": bool}``, OpenTelemetry spans (issue 25,
  ``mmsp_io._telemetry``; the extra ``otel``): with ``enabled`` (false when absent), a SERVER
  span per request, the caller's ``traceparent`` its parent, and the row client's span of the
  upstream call within it; message content is recorded only with ``record_content``.
  Absent, ``MMSP_OTEL`` decides as for any client; ``enabled: false`` turns spans off
  whatever it says.
- ``access_log``: ``"stderr"``, ``"off"`` or a file path: where the access log goes, checked
  when it is set up (``access.configure``; absent: stderr for ``serve``, as is under ASGI).

Keys with limits and where their counts live (08 D75, D76; enforced by
``mmsp_io.server.limits``):

- ``keys``: ``[{"name", "key" | "key_sha256", "models"?, "rpm"?, "tpm"?, "budget"?: {"usd",
  "period": "day" | "month"}, "tags"?}]``, beside ``api_keys`` (whose entries are keys with no
  limits). ``name`` is what logs and metrics show, never the key; ``key`` may be an environment
  reference, ``key_sha256`` is the hex SHA-256 of the key, so the file need not hold it;
  ``models`` lists the ``server_model_id`` values the key may name (absent: all); ``rpm`` and
  ``tpm`` are requests and tokens per minute, ``budget.usd`` the dollars per UTC day or month.
  A name or a key given twice (``api_keys`` included) is refused.
- ``store``: ``{"redis_url", "on_error": "closed" | "open", "timeout_s"}``: the keys' counts
  shared through Redis (``redis_url`` may be an environment reference: it may hold a
  password); ``on_error`` says what a request gets while the store fails (``closed``, the
  default: 503; ``open``: served uncounted), ``timeout_s`` (1 s) bounds every store call.
  Absent: the counts are the process's own.
- a row's ``pricing``: ``{"prompt_tokens", "response_tokens", "thoughts_tokens"?,
  "cached_tokens"?, "currency"?: "USD"}``, USD per million tokens as ``list_supported_models``
  writes them (``thoughts_tokens`` defaults to the response price); absent, the catalog's price
  of the row's model at its endpoint applies, if it has one.

A key this module does not know is refused, at the top of the file (08 D75: a misspelt key
must never leave the server open), in those objects and in a row: a misspelt ``base_url``
would otherwise send the row's key to the vendor's default endpoint. ``host`` and ``port``
are known at the top: a playground saves them beside the configuration (07 §8); the server
does not read them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Final, Literal, final

import attrs

from adapters import ModelPricing

from .._telemetry import Telemetry
from ..remote_images import RemoteImages

__all__ = ["DEFAULT_COOLDOWN_S", "GATEWAY_IMAGES", "Budget", "ConfigError", "KeyRow", "ModelRow",
           "ServerConfig", "StoreSettings", "load_config", "read_config", "resolve_config"]

#: The keys of the file's top level (module doc).
_TOP_LEVEL: Final = ("models", "api_keys", "keys", "store", "metrics", "remote_images",
                     "connections", "telemetry", "access_log", "host", "port")
_REQUIRED: Final = ("model_id", "api_key", "server_model_id")
_OPTIONAL: Final = ("base_url", "client_type")
_LISTS: Final = ("extra_body_keys",)
_COLUMNS: Final = (*_REQUIRED, *_OPTIONAL, *_LISTS, "pricing", "weight", "cooldown_s")
#: Seconds a row that failed over is passed over when its ``cooldown_s`` is absent (08 D77).
DEFAULT_COOLDOWN_S: Final = 30.0
_PRICES: Final = ("prompt_tokens", "cached_tokens", "thoughts_tokens", "response_tokens")
_PRICING: Final = ("currency", *_PRICES)
_KEY_FIELDS: Final = ("name", "key", "key_sha256", "models", "rpm", "tpm", "budget", "tags")
_BUDGET: Final = ("usd", "period")
_PERIODS: Final = ("day", "month")
_STORE: Final = ("redis_url", "on_error", "timeout_s")
_ON_ERROR: Final = ("closed", "open")
_SHA256: Final = re.compile(r"[0-9a-fA-F]{64}")
_METRICS: Final = ("show_errors", "token")
_TELEMETRY: Final = ("enabled", "record_content")
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
    #: The ``pricing`` column (USD); ``None``: the catalog's price, if any (module doc).
    pricing: ModelPricing | None = None
    #: The ``weight`` column: its share of a weighted group's picks; ``None``: not given
    #: (module doc, 08 D77).
    weight: float | None = None
    #: The ``cooldown_s`` column: seconds the row is passed over after it failed (08 D77).
    cooldown_s: float = DEFAULT_COOLDOWN_S


@final
@attrs.frozen
class Budget:
    """A key's spending limit: ``usd`` dollars per UTC ``period`` (08 D75)."""

    usd: float
    period: Literal["day", "month"]


@final
@attrs.frozen
class KeyRow:
    """A caller's key and its limits (08 D75); ``None`` is no limit."""

    #: What logs and metrics show, never the key.
    name: str
    #: The SHA-256 digest of the key, what a presented token is compared with.
    sha256: bytes = attrs.field(repr=False)
    #: The ``server_model_id`` values the key may name; ``None``: every served model.
    models: tuple[str, ...] | None = None
    #: Requests per minute.
    rpm: int | None = None
    #: Tokens (every kind, spec 01 §6's total) of finished streams per minute.
    tpm: int | None = None
    budget: Budget | None = None
    tags: tuple[str, ...] = ()

    @property
    def limited(self) -> bool:
        """Whether the key has a count to keep (``rpm``, ``tpm`` or ``budget``)."""
        return self.rpm is not None or self.tpm is not None or self.budget is not None

    def allows(self, model: str) -> bool:
        """Whether the key may name the served model ``model``."""
        return self.models is None or model in self.models


@final
@attrs.frozen
class StoreSettings:
    """``store``: where the keys' counts are shared (module doc, 08 D76)."""

    redis_url: str = attrs.field(repr=False)
    #: What a request gets while the store fails: ``"closed"``, 503; ``"open"``, served.
    on_error: Literal["closed", "open"] = "closed"
    #: Seconds any one store call may take.
    timeout_s: float = 1.0


@final
@attrs.frozen
class ServerConfig:
    """A validated configuration: the rows in file order, the accepted bearer tokens and the
    gateway's settings (module doc)."""

    #: The rows in file order; those of a group share a ``server_model_id`` (08 D77).
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
    #: ``keys``: the keys with names and limits (08 D75).
    keys: tuple[KeyRow, ...] = ()
    #: ``store``: ``None``, the counts are the process's own (08 D76).
    store: StoreSettings | None = None
    #: ``metrics.token``: the bearer token of ``GET /metrics`` off loopback (module doc).
    metrics_token: str | None = attrs.field(default=None, repr=False)
    #: ``telemetry``: the spans' settings, ``False`` when not enabled, ``None`` when absent
    #: (``MMSP_OTEL`` decides; module doc).
    telemetry: Telemetry | bool | None = None
    #: ``access_log`` as written (``access.configure`` checks it; module doc).
    access_log: Any = None

    @property
    def open(self) -> bool:
        """Whether every request is accepted (neither ``api_keys`` nor ``keys``)."""
        return not self.api_keys and not self.keys


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
        ConfigError: a key is unknown (at the top, in a row, in ``metrics``,
            ``remote_images`` or ``telemetry``); ``models`` is not a non-empty list of
            objects; a required column is not a non-empty string; an optional column is not
            a string; ``extra_body_keys`` is not a list of non-empty strings; ``weight`` or
            ``cooldown_s`` is not a number in range; a row repeats another in every column
            (08 D77); ``api_keys`` is not a list of non-empty strings; a
            reference is malformed or names a variable that is unset or empty; ``metrics``,
            ``remote_images``, ``telemetry``, ``store``, an entry of ``keys`` or a ``pricing``
            column is not an object of the values the module doc lists; a key's name or key
            repeats (in ``keys`` or ``api_keys``) or its ``models`` names a model not served.
            The message names the cell.
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
    for index, row in enumerate(models):
        rows.append(_row(row, f"models[{index}]", env, fail))
        if rows[-1] in rows[:-1]:  # the rows of a group must differ (module doc)
            raise fail(f"models[{index}] repeats models[{rows.index(rows[-1])}] in every "
                       f"column; the rows of a group must differ.")
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
                        connections=_connections(document, fail),
                        keys=_keys(document.get("keys"), tokens,
                                   {row.server_model_id for row in rows}, env, fail),
                        store=_store(document, env, fail),
                        metrics_token=_metrics_token(metrics, env, fail),
                        telemetry=_telemetry(document, fail),
                        access_log=document.get("access_log"))


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


def _metrics_token(metrics: Mapping[str, Any], env: Mapping[str, str],
                   fail: _Fail) -> str | None:
    """``metrics.token``, its reference resolved; ``None`` when absent."""
    token = metrics.get("token")
    if token is None:
        return None
    if not isinstance(token, str) or not token:
        raise fail("metrics.token must be a non-empty string.")
    return _resolve(token, "metrics.token", env, fail)


def _telemetry(document: Mapping[str, Any], fail: _Fail) -> Telemetry | bool | None:
    """``telemetry`` (module doc): ``None`` when absent, ``False`` unless ``enabled``."""
    if document.get("telemetry") is None:
        return None
    section = _section(document, "telemetry", _TELEMETRY, fail)
    if not _flag(section, "telemetry.enabled", False, fail):
        return False
    return Telemetry(record_content=_flag(section, "telemetry.record_content", False, fail))


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
        pricing=_pricing(row.get("pricing"), f"{where}.pricing", fail),
        weight=None if row.get("weight") is None else float(
            _number(row["weight"], f"{where}.weight", fail)),
        cooldown_s=DEFAULT_COOLDOWN_S if row.get("cooldown_s") is None else float(
            _number(row["cooldown_s"], f"{where}.cooldown_s", fail, zero=True)),
    )


def _number(value: Any, cell: str, fail: _Fail, *, whole: bool = False,
            zero: bool = False) -> Any:
    """``value`` if it is a finite number (a whole one when ``whole``), above 0 (or at least 0
    when ``zero``)."""
    kind = int if whole else int | float
    if (isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value)
            or value < 0 or (value == 0 and not zero)):
        raise fail(f"{cell} must be a {'whole ' if whole else ''}number, "
                   f"{'at least 0' if zero else 'above 0'}.")
    return value


def _pricing(value: Any, cell: str, fail: _Fail) -> ModelPricing | None:
    """A row's ``pricing`` column (module doc), ``None`` when absent."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise fail(f"{cell} must be an object.")
    _known(value, cell, _PRICING, fail)
    if value.get("currency", "USD") != "USD":
        raise fail(f"{cell}.currency must be \"USD\": the gateway counts dollars.")
    for key in ("prompt_tokens", "response_tokens"):
        if key not in value:
            raise fail(f"{cell}.{key} is required: USD per million tokens.")
    prices = {key: _number(value[key], f"{cell}.{key}", fail, zero=True)
              for key in _PRICES if value.get(key) is not None}
    return ModelPricing("USD", prices["prompt_tokens"],
                        prices.get("thoughts_tokens", prices["response_tokens"]),
                        prices["response_tokens"], prices.get("cached_tokens"))


def _keys(value: Any, tokens: list[str], served: Collection[str],
          env: Mapping[str, str], fail: _Fail) -> tuple[KeyRow, ...]:
    """The ``keys`` list (module doc); ``tokens`` are the ``api_keys`` entries, which no key
    may repeat, ``served`` the ``server_model_id`` values."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise fail("keys must be a list of objects.")
    owners = {hashlib.sha256(token.encode()).digest(): f"api_keys[{index}]"
              for index, token in enumerate(tokens)}
    names: dict[str, str] = {}
    rows = []
    for index, entry in enumerate(value):
        where = f"keys[{index}]"
        row = _key_row(entry, where, served, env, fail)
        if row.name in names:
            raise fail(f"{where}.name repeats {names[row.name]}.name.")
        if row.sha256 in owners:
            raise fail(f"{where} repeats the key of {owners[row.sha256]}.")
        names[row.name] = owners[row.sha256] = where
        rows.append(row)
    return tuple(rows)


def _key_row(entry: Any, where: str, served: Collection[str], env: Mapping[str, str],
             fail: _Fail) -> KeyRow:
    """One entry of ``keys`` (module doc)."""
    if not isinstance(entry, Mapping):
        raise fail(f"{where} must be an object.")
    _known(entry, where, _KEY_FIELDS, fail)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise fail(f"{where}.name must be a non-empty string.")
    key, digest = entry.get("key"), entry.get("key_sha256")
    if (key is None) == (digest is None):
        raise fail(f"{where} must have one of key and key_sha256.")
    if key is not None:
        if not isinstance(key, str) or not key:
            raise fail(f"{where}.key must be a non-empty string.")
        sha256 = hashlib.sha256(_resolve(key, f"{where}.key", env, fail).encode()).digest()
    else:
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise fail(f"{where}.key_sha256 must be 64 hex digits, the SHA-256 of the key.")
        sha256 = bytes.fromhex(digest)
    models = None
    if "models" in entry:
        models = _strings(entry["models"], f"{where}.models", fail)
        for model in models:
            if model not in served:
                raise fail(f"{where}.models names {model!r}, which no row serves.")
    limits = {field: _number(entry[field], f"{where}.{field}", fail, whole=True)
              for field in ("rpm", "tpm") if entry.get(field) is not None}
    return KeyRow(name=name, sha256=sha256, models=models, **limits,
                  budget=_budget(entry.get("budget"), f"{where}.budget", fail),
                  tags=_strings(entry.get("tags"), f"{where}.tags", fail))


def _budget(value: Any, cell: str, fail: _Fail) -> Budget | None:
    """A key's ``budget`` object, ``None`` when absent."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise fail(f"{cell} must be an object {{\"usd\", \"period\"}}.")
    _known(value, cell, _BUDGET, fail)
    period = value.get("period")
    if period not in _PERIODS:
        raise fail(f"{cell}.period must be one of {', '.join(_PERIODS)}.")
    return Budget(usd=float(_number(value.get("usd"), f"{cell}.usd", fail)), period=period)


def _store(document: Mapping[str, Any], env: Mapping[str, str],
           fail: _Fail) -> StoreSettings | None:
    """The ``store`` object (module doc), ``None`` when absent."""
    if document.get("store") is None:
        return None
    section = _section(document, "store", _STORE, fail)
    url = section.get("redis_url")
    if not isinstance(url, str) or not url:
        raise fail("store.redis_url must be a non-empty string (redis://host:port/db).")
    on_error = section.get("on_error", "closed")
    if on_error not in _ON_ERROR:
        raise fail(f"store.on_error must be one of {', '.join(_ON_ERROR)}.")
    return StoreSettings(redis_url=_resolve(url, "store.redis_url", env, fail),
                         on_error=on_error,
                         timeout_s=float(_number(section.get("timeout_s", 1.0),
                                                 "store.timeout_s", fail)))


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
