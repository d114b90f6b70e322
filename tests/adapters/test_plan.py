"""``adapters.prepare``: the one pure entry of a request (08 D79, D37, D57)."""

from __future__ import annotations

import json
import warnings

import attrs
import pytest

import adapters
from mmsp_core import (
    ImageUrlDone,
    InvalidMessageError,
    TextDone,
    ToolResultDone,
    UniConfig,
    UniMessage,
    UnsupportedParameterError,
    UsageMetadata,
)
from mmsp_core.pipeline import END, NEED_DATA

HELLO = [{"role": "user", "content_items": [{"type": "text.done", "text": "hi"}]}]
CAT = "https://images.test/cat.png"
DOG = "HTTP://images.test/dog.png"
INLINE = "data:image/png;base64,AAAA"


def image_history() -> list[UniMessage]:
    return [
        UniMessage("user", (TextDone("look"), ImageUrlDone(CAT), ImageUrlDone(INLINE))),
        UniMessage("user", (ToolResultDone("seen", "call_1", images=(CAT, DOG)),)),
    ]


@pytest.mark.parametrize(
    ("client", "model"),
    [("openai-responses", "gpt-4o"), ("anthropic-official", "claude-sonnet-4-6"),
     ("openai-chat", "gpt-4o")],
)
def test_the_plans_request_is_what_build_request_builds(client: str, model: str) -> None:
    config = {"max_tokens": 50, "extra_body": {"metadata": {"k": "v"}}}
    plan = adapters.prepare(client, model, HELLO, config)
    assert plan.request({}) == adapters.build_request(client, model, HELLO, config)
    assert json.loads(plan.request({}).body)["metadata"] == {"k": "v"}
    assert plan.config == adapters.coerce_config(client, config)
    assert plan.messages == tuple(adapters.coerce_messages(client, HELLO))


def test_a_client_that_sends_image_bytes_lists_each_remote_image_once() -> None:
    plan = adapters.prepare("openai-chat", "gpt-4o", image_history(), None)
    assert dict(plan.image_urls) == {CAT: 0, DOG: 1}
    assert list(plan.image_urls) == [CAT, DOG]


def test_a_client_that_sends_urls_lists_no_image() -> None:
    plan = adapters.prepare("openai-responses", "gpt-4o", image_history(), None)
    assert dict(plan.image_urls) == {}


def test_the_request_carries_the_fetched_images_in_place_of_their_urls() -> None:
    plan = adapters.prepare("openai-chat", "gpt-4o", image_history(), None)
    fetched = {CAT: "data:image/png;base64,Q0FU", DOG: "data:image/png;base64,RE9H"}
    body = plan.request(fetched).body.decode()
    assert CAT not in body and DOG not in body
    assert fetched[CAT] in body and fetched[DOG] in body and INLINE in body
    assert plan.messages == tuple(image_history())  # the plan itself is unchanged


def test_an_empty_history_is_refused_after_every_config_error() -> None:
    with pytest.raises(UnsupportedParameterError):
        adapters.prepare("openai-responses", "gpt-4o", [], {"temperature": "hot"})
    plan = adapters.prepare("openai-responses", "gpt-4o", [], None)
    with pytest.raises(InvalidMessageError, match="messages is empty"):
        plan.request({})
    # build_request keeps its own order: the empty history first (docs/decisions.md).
    with pytest.raises(InvalidMessageError, match="messages is empty"):
        adapters.build_request("openai-responses", "gpt-4o", [], {"temperature": "hot"})


def test_a_value_built_with_a_wrong_type_is_checked_like_a_dict() -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        adapters.prepare("openai-responses", "gpt-4o", HELLO,
                         UniConfig(max_tokens="100"))  # type: ignore[arg-type]
    assert caught.value.parameter == "max_tokens"


def test_an_unknown_key_warns_at_the_caller_or_raises_in_strict_mode() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adapters.prepare("openai-responses", "gpt-4o", HELLO, {"max_token": 5})
    assert [w.filename for w in caught] == [__file__]
    assert "max_tokens" in str(caught[0].message)
    with pytest.raises(UnsupportedParameterError) as refused:
        adapters.prepare("openai-responses", "gpt-4o", HELLO, {"max_token": 5}, strict=True)
    assert refused.value.parameter == "max_token"


def test_the_trace_id_is_the_configs_except_on_a_gateways_client() -> None:
    config = {"trace_id": "run-1"}
    assert adapters.prepare("openai-responses", "gpt-4o", HELLO, config).trace_id == "run-1"
    assert adapters.prepare("mmsp", "openai-responses/gpt-4o", HELLO, config).trace_id is None


def test_the_plans_pipeline_reads_the_protocols_stream() -> None:
    plan = adapters.prepare("openai-responses", "gpt-4o", HELLO, None, strict=True)
    assert plan.protocol is adapters.PROTOCOLS["openai-responses"]
    body = adapters.render("openai-responses", [TextDone("Hi")], UsageMetadata(0, 5, None, 2),
                           "stop")
    pipeline = plan.new_pipeline(None)
    pipeline.receive_data(body)
    pipeline.receive_eof()
    events = []
    while (event := pipeline.next_event()) is not END:
        if event is not NEED_DATA:
            events.append(event)
    assert events == list(adapters.decode("openai-responses", [body], strict=True))


def test_the_plan_is_frozen() -> None:
    plan = adapters.prepare("openai-responses", "gpt-4o", HELLO, None)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        plan.model = "gpt-5"  # type: ignore[misc]


def test_the_read_once_twins_left_the_public_surface() -> None:
    for name in ("build_read_request", "check_read_config"):
        assert name not in adapters.__all__
        assert not hasattr(adapters, name)
    assert {"prepare", "CallPlan"} <= set(adapters.__all__)
