"""The example's tests: two replay recorded cassettes (one each), one
scripts the model with a scenario, one needs no model at all."""

import os

import pytest

import assistant


@pytest.mark.llmproxy
def test_greeting():
    # cassettes/tests/test_assistant/test_greeting.cassette: one JSON answer.
    assert assistant.greet("Ada") == "Hello, Ada! How can I help you today?"
    # The proxy's URL was already set when the application was imported.
    assert assistant.IMPORT_TIME_BASE_URL == os.environ["LLMPROXY_URL"] + "/v1"


@pytest.mark.llmproxy
def test_weather_report(llmproxy):
    # cassettes/tests/test_assistant/test_weather_report.cassette: a streamed
    # tool call, then the streamed text after the tool's result.
    assert assistant.weather_report("What is the weather in Paris?") == "It is sunny in Paris, 21 °C."
    llmproxy.verify("get_weather", args={"city": "Paris"}, count=1)


@pytest.mark.llmproxy(scenario="scenarios/weather-lyon.yaml")
def test_weather_scripted(llmproxy):
    # No cassette: llmproxy mock answers from the scenario file.
    assert assistant.weather_report("And in Lyon?") == "Lyon is sunny today."
    llmproxy.verify("get_weather", args={"city": "Lyon"})


def test_parse_sse_pieces():
    # No proxy: the stream parser alone, on a tool call split over deltas.
    lines = [
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":'
        b'[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}\n',
        b"\n",
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":"}}]}}]}\n',
        b"\n",
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"Oslo\\"}"}}]}}]}\n',
        b"\n",
        b'data: {"choices":[],"usage":{"total_tokens":3}}\n',
        b"data: [DONE]\n",
    ]
    got = assistant.parse_sse(lines)
    assert got == {"content": "", "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": '{"city":"Oslo"}'}]}
