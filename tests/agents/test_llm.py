"""LLMClient through the real ``openai`` client against the loopback fake server."""

from __future__ import annotations

import json

import pytest

from tests.fakes.openai_server import FakeOpenAI, call, error, rate_limited, reply, server_error, stall
from zocrates_nb.agents.llm import LLMClient, estimate_cost, is_loopback, redact
from zocrates_nb.diagnostics.events import EventLog
from zocrates_nb.errors import LLMError
from zocrates_nb.settings.config import LLMSettings

KEY = "sk-test-SECRET-0123456789abcdef"


class Events(EventLog):
    """The real EventLog (JSONL on disk), with the records read back for assertions."""

    @property
    def records(self) -> list[tuple[str, dict]]:
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        return [(e.pop("kind"), e) for e in map(json.loads, lines)]


@pytest.fixture
def events(tmp_path) -> Events:
    return Events(tmp_path / "diagnostics")


def settings(base_url: str, **over) -> LLMSettings:
    fields = {
        "base_url": base_url,
        "model": "gpt-test",
        "models": {"coordinator": "gpt-router"},
        "prices": {"gpt-test": {"prompt": 2.0, "completion": 8.0}},
        "timeout_s": 5,
        "max_retries": 2,
    }
    fields.update(over)
    return LLMSettings(**fields)


def client(server: FakeOpenAI, events=None, key=KEY, **over) -> LLMClient:
    return LLMClient(settings(server.base_url, **over), key, events, backoff_base_s=0.01)


def test_non_streaming_reply_usage_cost_and_event(events):
    with FakeOpenAI() as server:
        server.queue(
            reply("Hello there", usage={"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500})
        )
        out = client(server, events).chat("library_synthesizer", [{"role": "user", "content": "hi"}], profile_tokens=7)
        assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
        assert server.bodies()[0]["model"] == "gpt-test"
    assert out.content == "Hello there" and out.tool_calls == []
    assert out.usage["prompt_tokens"] == 1000 and out.usage["completion_tokens"] == 500
    assert out.usage["cost_usd"] == pytest.approx((1000 * 2 + 500 * 8) / 1e6)
    kind, fields = events.records[-1]
    assert kind == "llm" and fields["role"] == "library_synthesizer" and fields["model"] == "gpt-test"
    assert fields["profile_tokens"] == 7 and fields["usage_source"] == "api" and fields["latency_ms"] >= 0


def test_model_per_role_and_unpriced_model_has_no_cost():
    with FakeOpenAI() as server:
        server.queue(reply("{}"))
        out = client(server).chat("coordinator", [{"role": "user", "content": "route"}])
        assert server.bodies()[0]["model"] == "gpt-router"
    assert out.model == "gpt-router" and out.usage["cost_usd"] is None


def test_streaming_calls_back_and_reads_usage_from_final_chunk():
    tokens: list[str] = []
    with FakeOpenAI() as server:
        server.queue(
            reply(
                "Streaming works in several pieces.",
                pieces=5,
                usage={"prompt_tokens": 11, "completion_tokens": 6, "total_tokens": 17},
            )
        )
        out = client(server).chat("library_synthesizer", [{"role": "user", "content": "x"}], stream_cb=tokens.append)
        body = server.bodies()[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert len(tokens) >= 4 and "".join(tokens) == out.content == "Streaming works in several pieces."
    assert (out.usage["prompt_tokens"], out.usage["completion_tokens"]) == (11, 6)


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_are_taken_from_the_tool_calls_field(stream):
    with FakeOpenAI() as server:
        server.queue(reply("", [call("search_corpus", query="cell atlas", k=5), call("get_document_toc", key="K")]))
        out = client(server).chat(
            "library_search",
            [{"role": "user", "content": "q"}],
            tools=[{"type": "function", "function": {"name": "search_corpus", "parameters": {"type": "object"}}}],
            stream_cb=(lambda _t: None) if stream else None,
        )
        assert server.bodies()[0]["tools"][0]["function"]["name"] == "search_corpus"
    assert [c.name for c in out.tool_calls] == ["search_corpus", "get_document_toc"]
    assert out.tool_calls[0].parsed_arguments() == {"query": "cell atlas", "k": 5}
    message = out.assistant_message()
    assert message["tool_calls"][1]["function"]["arguments"] == json.dumps({"key": "K"})


def test_text_that_looks_like_a_tool_call_is_not_one():
    with FakeOpenAI() as server:
        server.queue(reply('{"name": "search_corpus", "arguments": {"query": "x"}}'))
        out = client(server).chat("library_search", [{"role": "user", "content": "q"}])
    assert out.tool_calls == []


def test_missing_usage_is_counted_offline():
    with FakeOpenAI() as server:
        server.queue(reply("four words right here", usage=False))
        out = client(server).chat("library_synthesizer", [{"role": "user", "content": "count me please"}])
    assert out.usage["usage_source"] == "estimated"
    assert out.usage["prompt_tokens"] >= 3 and out.usage["completion_tokens"] >= 4


def test_401_names_the_key_variable_and_never_prints_the_key(events):
    with FakeOpenAI(api_key="sk-the-right-one") as server:
        with pytest.raises(LLMError) as info:
            client(server, events).chat("library_synthesizer", [{"role": "user", "content": "x"}])
        assert len(server.requests) == 1  # auth failures are not retried
    text = str(info.value)
    assert "401" in text and "$OPENAI_API_KEY" in text and "zocrates-nb llm set --api-key-env" in text
    assert KEY not in text and KEY not in repr(info.value) and info.value.__cause__ is None
    assert events.records[-1][1]["error"] and KEY not in json.dumps(events.records)
    assert KEY not in events.path.read_text()


def test_404_names_the_model_and_the_command():
    with FakeOpenAI(models={"real-model"}) as server:
        with pytest.raises(LLMError) as info:
            client(server).chat("library_synthesizer", [{"role": "user", "content": "x"}])
    assert "gpt-test" in info.value.message and "zocrates-nb llm set --model" in info.value.hint


def test_429_then_success_honours_retry_after():
    waits: list[float] = []
    with FakeOpenAI() as server:
        server.queue(rate_limited("0"), rate_limited("0"), reply("finally"))
        llm = LLMClient(settings(server.base_url), KEY, None, sleep=waits.append)
        out = llm.chat("library_synthesizer", [{"role": "user", "content": "x"}])
        assert len(server.requests) == 3
    assert out.content == "finally" and out.usage["retries"] == 2 and waits == [0.0, 0.0]


def test_500_retried_then_reported_with_the_endpoint():
    with FakeOpenAI() as server:
        server.queue(server_error(), server_error(), server_error())
        with pytest.raises(LLMError) as info:
            client(server).chat("library_synthesizer", [{"role": "user", "content": "x"}])
        assert len(server.requests) == 3  # first try + max_retries=2
    assert "500" in info.value.message and server.base_url in info.value.message


def test_500_then_success_streams_once():
    tokens: list[str] = []
    with FakeOpenAI() as server:
        server.queue(server_error(), reply("ok now"))
        out = client(server).chat("library_synthesizer", [{"role": "user", "content": "x"}], stream_cb=tokens.append)
    assert out.content == "ok now" == "".join(tokens)


def test_a_read_timeout_is_retried_and_the_success_is_recorded_once(events):
    with FakeOpenAI() as server:
        server.queue(
            stall(1.5),
            reply("after the stall", usage={"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}),
        )
        out = client(server, events, timeout_s=0.5).chat("library_synthesizer", [{"role": "user", "content": "x"}])
        assert len(server.requests) == 2
    assert out.content == "after the stall" and out.usage["retries"] == 1
    llm_events = [fields for kind, fields in events.records if kind == "llm"]
    assert len(llm_events) == 1
    assert llm_events[0]["prompt_tokens"] == 11 and llm_events[0]["completion_tokens"] == 3
    assert llm_events[0]["usage_source"] == "api" and "error" not in llm_events[0]


def test_timeouts_on_every_attempt_name_the_endpoint_and_the_setting(events):
    with FakeOpenAI() as server:
        server.queue(stall(1.5), stall(1.5))
        with pytest.raises(LLMError) as info:
            client(server, events, timeout_s=0.5, max_retries=1).chat(
                "library_synthesizer", [{"role": "user", "content": "x"}]
            )
        assert len(server.requests) == 2  # first try + max_retries=1
    error_ = info.value
    assert server.base_url in error_.message and "in time" in error_.message and "1 retries" in error_.message
    assert "timeout_s" in error_.hint and "zocrates-nb llm set --timeout-s" in error_.hint
    assert KEY not in str(error_) and KEY not in repr(error_) and error_.__cause__ is None
    kind, fields = events.records[-1]
    assert kind == "llm" and fields["error"] == error_.message


def test_other_4xx_shows_the_server_message_redacted():
    with FakeOpenAI() as server:
        server.queue(error(400, f"bad request made with {KEY}"))
        with pytest.raises(LLMError) as info:
            client(server).chat("library_synthesizer", [{"role": "user", "content": "x"}])
    assert "bad request" in str(info.value) and KEY not in str(info.value)


def test_unreachable_endpoint_names_the_url():
    from tests.fakes.loopback import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    llm = LLMClient(settings(url, max_retries=1), KEY, None, backoff_base_s=0.01)
    with pytest.raises(LLMError) as info:
        llm.chat("library_synthesizer", [{"role": "user", "content": "x"}])
    assert url in info.value.message and "--base-url" in info.value.hint


def test_no_key_loopback_uses_placeholder_remote_refuses():
    with FakeOpenAI() as server:
        server.queue(reply("local ok"))
        out = LLMClient(settings(server.base_url), None, None).chat("coordinator", [{"role": "user", "content": "x"}])
        assert server.requests[0]["headers"]["authorization"] == "Bearer not-needed"
    assert out.content == "local ok"
    with pytest.raises(LLMError) as info:
        LLMClient(settings("https://api.openai.com/v1"), None, None)
    assert "No API key" in info.value.message and "OPENAI_API_KEY" in info.value.hint


def test_repr_and_helpers_never_show_the_key():
    llm = LLMClient(settings("https://api.example.org/v1"), KEY, None)
    assert KEY not in repr(llm)
    assert redact(f"key={KEY}!", KEY) == "key=[redacted]!"
    assert is_loopback("http://localhost:11434/v1") and is_loopback("http://[::1]:8000/v1")
    assert not is_loopback("https://api.openai.com/v1")
    assert estimate_cost({"m": {"prompt": 1, "completion": 2}}, "m", 1_000_000, 500_000) == 2.0


def test_a_failing_stream_callback_is_not_disguised_as_an_endpoint_error():
    def broken(_text: str) -> None:
        raise RuntimeError("widget went away")

    with FakeOpenAI() as server:
        server.queue(reply("some text"))
        with pytest.raises(RuntimeError, match="widget went away"):
            client(server).chat("library_synthesizer", [{"role": "user", "content": "x"}], stream_cb=broken)
        assert len(server.requests) == 1
