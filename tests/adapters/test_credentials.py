"""The key-safety rule (spec 04 §3, 08 D25, D40) and the ``list_models`` family filter (04 §5),
pure: the environment is a mapping the test gives, the model list a list of ids.

Expected values are copied from the spec, not from the code.
"""

from __future__ import annotations

import pytest

from adapters.clients import credentials, same_family
from mmsp_core.errors import ApiKeyRequiredError, RoutingError

OPENAI = "https://api.openai.com/v1"
PROXY = "https://proxy.example/v1"


@pytest.mark.parametrize(
    ("api_key", "base_url", "environ", "expected"),
    [
        # A key given in code goes anywhere, with the base URL given, else the environment's,
        # else the default endpoint.
        ("sk-code", None, {"OPENAI_API_KEY": "sk-env"}, ("sk-code", OPENAI)),
        ("sk-code", PROXY, {"OPENAI_API_KEY": "sk-env"}, ("sk-code", PROXY)),
        ("sk-code", None, {"OPENAI_BASE_URL": PROXY}, ("sk-code", PROXY)),
        # The environment's key goes where the environment points, or to the default endpoint.
        (None, None, {"OPENAI_API_KEY": "sk-env"}, ("sk-env", OPENAI)),
        (None, None, {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": PROXY}, ("sk-env", PROXY)),
        (None, OPENAI + "/", {"OPENAI_API_KEY": "sk-env"}, ("sk-env", OPENAI + "/")),
        # An empty variable counts as unset.
        (None, None, {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": ""}, ("sk-env", OPENAI)),
    ],
)
def test_which_key_goes_where(
    api_key: str | None, base_url: str | None, environ: dict[str, str],
    expected: tuple[str | None, str],
) -> None:
    assert credentials("openai-official", api_key, base_url, environ) == expected


def test_the_environments_key_never_goes_to_a_base_url_given_in_code() -> None:
    with pytest.raises(ApiKeyRequiredError) as caught:
        credentials("openai-official", None, PROXY, {"OPENAI_API_KEY": "sk-env"})
    error = caught.value
    assert (error.client_type, error.api_key_env, error.base_url_env, error.base_url) == (
        "openai-official", "OPENAI_API_KEY", "OPENAI_BASE_URL", PROXY)
    assert "sk-env" not in str(error)


@pytest.mark.parametrize("environ", [{}, {"OPENAI_API_KEY": ""}])
def test_no_key_at_all_on_a_client_that_needs_one(environ: dict[str, str]) -> None:
    with pytest.raises(ApiKeyRequiredError) as caught:
        credentials("openai-official", None, None, environ)
    assert (caught.value.api_key_env, caught.value.base_url) == ("OPENAI_API_KEY", None)


@pytest.mark.parametrize(
    ("base_url", "environ", "expected"),
    [
        (None, {}, (None, "http://127.0.0.1:25752/v1")),
        (None, {"MMSP_API_KEY": "k"}, ("k", "http://127.0.0.1:25752/v1")),
        # Given a base URL, an open server runs keyless: the environment's key stays home.
        ("http://gw.example/v1", {"MMSP_API_KEY": "k"}, (None, "http://gw.example/v1")),
    ],
)
def test_an_open_server_runs_keyless(
    base_url: str | None, environ: dict[str, str], expected: tuple[str | None, str]
) -> None:
    assert credentials("mmsp", None, base_url, environ) == expected


def test_only_the_clients_own_variables_are_read() -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": PROXY}
    with pytest.raises(ApiKeyRequiredError):
        credentials("openai-official", None, None, environ)
    assert credentials("ant-messages", None, None, environ) == ("sk-ant", PROXY)


def test_an_unknown_client_type_is_a_routing_error() -> None:
    with pytest.raises(RoutingError):
        credentials("nope", "k", None, {})


IDS = ["gpt-6", "claude-opus-5", "text-embedding-3-small", "vendor/other", "", "GPT-7"]


@pytest.mark.parametrize(
    ("client_type", "kept"),
    [
        # openai-official's family includes the ids it redirects to openai-embedding (04 §2).
        ("openai-official", ["gpt-6", "text-embedding-3-small", "GPT-7"]),
        ("openai-embedding", ["gpt-6", "text-embedding-3-small", "GPT-7"]),
        ("anthropic-official", ["claude-opus-5"]),
        ("zai-official", []),
    ],
)
def test_same_family_keeps_the_ids_that_route_to_the_clients_family(
    client_type: str, kept: list[str]
) -> None:
    assert same_family(IDS, client_type) == kept
