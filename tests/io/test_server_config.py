"""The MMSP server's configuration file: ``$ENV`` references and validation at start, every
error naming its cell (spec 07 §2); and the last check, building each row's client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mmsp_io.server import (
    ASGIApp,
    ConfigError,
    Gateway,
    ModelRow,
    ServerConfig,
    asgi_app,
    load_config,
    read_config,
    resolve_config,
)

ROW = {"model_id": "gpt-5", "api_key": "sk-row", "server_model_id": "fast"}


def test_a_valid_file_is_resolved_in_table_order(tmp_path: Path) -> None:
    path = tmp_path / "server.json"
    path.write_text(json.dumps({
        "models": [
            {**ROW, "api_key": "$ROW_KEY", "base_url": "${ROW_URL}"},
            {"model_id": "$literal-model-id", "api_key": "k2", "server_model_id": "second",
             "client_type": "$ROW_TYPE", "base_url": ""},
        ],
        "api_keys": ["$TOKEN_A", "plain-token"],
        "host": "127.0.0.1",  # other top-level keys (a playground's) are left alone
    }))
    environ = {"ROW_KEY": "sk-from-env", "ROW_URL": "http://127.0.0.1:9/v1",
               "ROW_TYPE": "openai-chat", "TOKEN_A": "token-from-env"}
    config = load_config(path, environ=environ)
    assert config == ServerConfig(
        models=(
            ModelRow(server_model_id="fast", model_id="gpt-5", api_key="sk-from-env",
                     base_url="http://127.0.0.1:9/v1"),
            ModelRow(server_model_id="second", model_id="$literal-model-id", api_key="k2",
                     client_type="openai-chat"),
        ),
        api_keys=("token-from-env", "plain-token"),
        source=str(path),
    )
    assert not config.open
    assert "sk-from-env" not in repr(config) and "token-from-env" not in repr(config)
    assert read_config(path)["models"][0]["api_key"] == "$ROW_KEY"  # as written


def test_no_api_keys_is_an_open_server() -> None:
    assert resolve_config({"models": [ROW]}).open
    assert resolve_config({"models": [ROW], "api_keys": []}).open
    assert resolve_config({"models": [ROW], "api_keys": None}).open


INVALID: list[tuple[Any, dict[str, str], str]] = [
    ([], {}, 'the configuration must be a JSON object {"models": [...], "api_keys": [...]}.'),
    ({}, {}, "models must be a non-empty list of model rows."),
    ({"models": []}, {}, "models must be a non-empty list of model rows."),
    ({"models": {"a": ROW}}, {}, "models must be a non-empty list of model rows."),
    ({"models": [ROW, "row"]}, {}, "models[1] must be an object."),
    ({"models": [{**ROW, "model_id": ""}]}, {}, "models[0].model_id must be a non-empty string."),
    ({"models": [{k: v for k, v in ROW.items() if k != "api_key"}]}, {},
     "models[0].api_key must be a non-empty string."),
    ({"models": [{**ROW, "server_model_id": 3}]}, {},
     "models[0].server_model_id must be a non-empty string."),
    ({"models": [{**ROW, "base_url": 5}]}, {}, "models[0].base_url must be a string."),
    ({"models": [{**ROW, "client_type": ["openai"]}]}, {},
     "models[0].client_type must be a string."),
    ({"models": [{**ROW, "base_ur": "http://x"}]}, {},
     "models[0] has unknown columns ['base_ur']; the columns are model_id, api_key, "
     "server_model_id, base_url, client_type, extra_body_keys, pricing, weight, cooldown_s."),
    ({"models": [ROW, {**ROW, "model_id": "gpt-4o"}, ROW]}, {},
     "models[2] repeats models[0] in every column; the rows of a group must differ."),
    ({"models": [ROW, {**ROW, "server_model_id": "b", "api_key": "$X"}]}, {},
     "models[1].api_key references $X, which is not set in the environment."),
    ({"models": [{**ROW, "base_url": "${EMPTY}"}]}, {"EMPTY": ""},
     "models[0].base_url references $EMPTY, which is not set in the environment."),
    ({"models": [{**ROW, "client_type": "$not a name"}]}, {},
     "models[0].client_type starts with $ but is not a reference $NAME or ${NAME}."),
    ({"models": [ROW], "api_keys": "token"}, {}, "api_keys must be a list of non-empty strings."),
    ({"models": [ROW], "api_keys": ["a", ""]}, {}, "api_keys[1] must be a non-empty string."),
    ({"models": [ROW], "api_keys": ["$T"]}, {},
     "api_keys[0] references $T, which is not set in the environment."),
]


@pytest.mark.parametrize(("document", "environ", "message"), INVALID)
def test_each_invalid_configuration_is_refused_naming_the_cell(
    document: Any, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_config(document, environ=environ)
    assert str(raised.value) == message
    with pytest.raises(ConfigError) as named:
        resolve_config(document, source="server.json", environ=environ)
    assert str(named.value) == f"server.json: {message}"


def test_an_unreadable_or_non_json_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the server configuration"):
        load_config(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{models: }")
    with pytest.raises(ConfigError, match=r"broken\.json: the server configuration is not JSON"):
        load_config(broken)


@pytest.mark.parametrize(("changes", "error"), [
    ({"client_type": "no-such-type"}, "RoutingError"),
    ({"model_id": "unroutable-model-id"}, "RoutingError"),
    ({"base_url": "ftp://example.invalid"}, "UnsupportedParameterError"),
])
def test_every_rows_client_is_built_at_start(
    changes: dict[str, str], error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLIENT_TYPE", raising=False)
    document = {"models": [{**ROW, "server_model_id": "ok", "client_type": "openai-chat",
                            "base_url": "http://127.0.0.1:9/v1"}, {**ROW, **changes}]}
    config = resolve_config(document, source="server.json")
    with pytest.raises(ConfigError) as raised:
        Gateway(config)
    assert str(raised.value).startswith(f"server.json: models[1] ('fast'): {error}: ")
    assert "sk-row" not in str(raised.value)


def test_a_row_without_client_type_reads_client_type_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLIENT_TYPE", "openai-chat")
    gateway = Gateway({"models": [{**ROW, "model_id": "any-model-id",
                                   "base_url": "http://127.0.0.1:9/v1"}]})
    assert gateway.models == ("fast",)
    assert gateway._clients[gateway.config.models[0]].client_type == "openai-chat"


def test_the_asgi_app_loads_the_file_the_environment_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MMSP_SERVER_CONFIG", raising=False)
    with pytest.raises(ConfigError, match="set MMSP_SERVER_CONFIG"):
        asgi_app()
    path = tmp_path / "server.json"
    path.write_text(json.dumps({"models": [{**ROW, "client_type": "openai-chat",
                                            "base_url": "http://127.0.0.1:9/v1"}]}))
    monkeypatch.setenv("MMSP_SERVER_CONFIG", str(path))
    app = asgi_app(keepalive=1.0)
    assert isinstance(app, ASGIApp)
    assert (app.gateway.models, app.gateway.keepalive) == (("fast",), 1.0)
