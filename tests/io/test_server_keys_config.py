"""The gateway configuration's ``keys``, ``store`` and a row's ``pricing`` (08 D75, D76):
read and validated at start, every refusal naming its cell."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from adapters import ModelPricing
from mmsp_io.server import ConfigError, resolve_config
from mmsp_io.server.config import Budget, KeyRow, StoreSettings

ROW = {"model_id": "gpt-5", "api_key": "sk-row", "server_model_id": "fast"}
SLOW = {**ROW, "server_model_id": "slow"}


def sha(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def test_keys_are_read_with_their_limits() -> None:
    config = resolve_config({
        "models": [ROW, SLOW],
        "keys": [
            {"name": "team-a", "key": "$TEAM_A", "models": ["fast"], "rpm": 60, "tpm": 10_000,
             "budget": {"usd": 2.5, "period": "day"}, "tags": ["research"]},
            {"name": "ops", "key_sha256": sha("ops-key").hex().upper()},
        ],
    }, environ={"TEAM_A": "key-a"})
    assert config.keys == (
        KeyRow(name="team-a", sha256=sha("key-a"), models=("fast",), rpm=60, tpm=10_000,
               budget=Budget(2.5, "day"), tags=("research",)),
        KeyRow(name="ops", sha256=sha("ops-key")),
    )
    assert not config.open  # keys alone close the server
    assert config.keys[0].limited and not config.keys[1].limited
    assert config.keys[0].allows("fast") and not config.keys[0].allows("slow")
    assert config.keys[1].allows("slow")
    assert "key-a" not in repr(config) and sha("key-a").hex() not in repr(config)
    assert config.store is None


def test_store_and_pricing() -> None:
    config = resolve_config({
        "models": [{**ROW, "pricing": {"prompt_tokens": 1, "response_tokens": 4,
                                       "cached_tokens": 0.1}},
                   {**SLOW, "pricing": {"currency": "USD", "prompt_tokens": 0,
                                        "response_tokens": 2, "thoughts_tokens": 3}}],
        "store": {"redis_url": "${REDIS}", "on_error": "open", "timeout_s": 0.5},
    }, environ={"REDIS": "redis://:secret@127.0.0.1:6379/0"})
    assert config.models[0].pricing == ModelPricing("USD", 1, 4, 4, 0.1)
    assert config.models[1].pricing == ModelPricing("USD", 0, 3, 2, None)
    assert config.store == StoreSettings("redis://:secret@127.0.0.1:6379/0", "open", 0.5)
    assert "secret" not in repr(config)
    defaults = resolve_config({"models": [ROW], "store": {"redis_url": "redis://127.0.0.1"}})
    assert defaults.store == StoreSettings("redis://127.0.0.1", "closed", 1.0)


KEY = {"name": "a", "key": "k"}

INVALID: list[tuple[dict[str, Any], str]] = [
    ({"key": [KEY]}, "the configuration has unknown keys ['key']"),  # "keys" misspelt
    ({"keys": KEY}, "keys must be a list of objects."),
    ({"keys": ["k"]}, "keys[0] must be an object."),
    ({"keys": [{**KEY, "rpn": 3}]}, "keys[0] has unknown keys ['rpn']"),
    ({"keys": [{"key": "k"}]}, "keys[0].name must be a non-empty string."),
    ({"keys": [{"name": "a"}]}, "keys[0] must have one of key and key_sha256."),
    ({"keys": [{**KEY, "key_sha256": "00" * 32}]}, "keys[0] must have one of key and key_sha256."),
    ({"keys": [{"name": "a", "key": ""}]}, "keys[0].key must be a non-empty string."),
    ({"keys": [{"name": "a", "key": "$NOPE"}]},
     "keys[0].key references $NOPE, which is not set in the environment."),
    ({"keys": [{"name": "a", "key_sha256": "abc"}]},
     "keys[0].key_sha256 must be 64 hex digits, the SHA-256 of the key."),
    ({"keys": [{**KEY, "models": ["fats"]}]}, "keys[0].models names 'fats', which no row serves."),
    ({"keys": [{**KEY, "models": "fast"}]}, "keys[0].models must be a list of non-empty strings."),
    ({"keys": [{**KEY, "rpm": 0}]}, "keys[0].rpm must be a whole number, above 0."),
    ({"keys": [{**KEY, "tpm": 1.5}]}, "keys[0].tpm must be a whole number, above 0."),
    ({"keys": [{**KEY, "rpm": True}]}, "keys[0].rpm must be a whole number, above 0."),
    ({"keys": [{**KEY, "budget": 5}]}, 'keys[0].budget must be an object {"usd", "period"}.'),
    ({"keys": [{**KEY, "budget": {"usd": 5, "period": "week"}}]},
     "keys[0].budget.period must be one of day, month."),
    ({"keys": [{**KEY, "budget": {"usd": -1, "period": "day"}}]},
     "keys[0].budget.usd must be a number, above 0."),
    ({"keys": [{**KEY, "budget": {"usd": float("inf"), "period": "day"}}]},
     "keys[0].budget.usd must be a number, above 0."),
    ({"keys": [{**KEY, "tags": [""]}]}, "keys[0].tags must be a list of non-empty strings."),
    ({"keys": [KEY, {"name": "a", "key": "other"}]}, "keys[1].name repeats keys[0].name."),
    ({"keys": [KEY, {"name": "b", "key_sha256": sha("k").hex()}]},
     "keys[1] repeats the key of keys[0]."),
    ({"api_keys": ["k"], "keys": [KEY]}, "keys[0] repeats the key of api_keys[0]."),
    ({"store": "redis://x"}, "store must be an object."),
    ({"store": {}}, "store.redis_url must be a non-empty string (redis://host:port/db)."),
    ({"store": {"redis_url": "redis://x", "on_error": "ignore"}},
     "store.on_error must be one of closed, open."),
    ({"store": {"redis_url": "redis://x", "timeout_s": 0}},
     "store.timeout_s must be a number, above 0."),
    ({"store": {"redis_url": "redis://x", "url": "y"}}, "store has unknown keys ['url']"),
    ({"models": [{**ROW, "pricing": 3}]}, "models[0].pricing must be an object."),
    ({"models": [{**ROW, "pricing": {"prompt_tokens": 1}}]},
     "models[0].pricing.response_tokens is required: USD per million tokens."),
    ({"models": [{**ROW, "pricing": {"prompt_tokens": 1, "response_tokens": -2}}]},
     "models[0].pricing.response_tokens must be a number, at least 0."),
    ({"models": [{**ROW, "pricing": {"prompt_tokens": 1, "response_tokens": 2,
                                     "currency": "CNY"}}]},
     'models[0].pricing.currency must be "USD": the gateway counts dollars.'),
    ({"models": [{**ROW, "pricing": {"prompt_tokens": 1, "output": 2}}]},
     "models[0].pricing has unknown keys ['output']"),
]


@pytest.mark.parametrize(("change", "message"), INVALID)
def test_each_invalid_setting_is_refused_naming_the_cell(
    change: dict[str, Any], message: str
) -> None:
    document = {"models": [ROW], **change}
    with pytest.raises(ConfigError) as raised:
        resolve_config(document, environ={})
    assert str(raised.value).startswith(message)
