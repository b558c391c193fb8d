"""A tiny assistant that talks to the OpenAI Chat Completions API with
urllib alone: the application the example's tests exercise.

It reads OPENAI_BASE_URL and OPENAI_API_KEY when it makes a request, as the
openai SDK does, so under the llmproxy pytest plugin its requests go to the
test's cassette without any change here.
"""

import json
import os
import urllib.request

MODEL = "gpt-4o-mini"

# What an SDK client built when this module is imported would be given: the
# plugin sets the variables before the tests import their application.
IMPORT_TIME_BASE_URL = os.environ.get("OPENAI_BASE_URL")

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _post(body):
    base = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    req = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps(body).encode("utf-8"),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", ""),
        },
    )
    return urllib.request.urlopen(req, timeout=30)


def greet(name):
    """One non-streamed completion: the model's greeting for name."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Say hello to %s." % name}]}
    with _post(body) as resp:
        return json.load(resp)["choices"][0]["message"]["content"]


def parse_sse(lines):
    """The assistant message a streamed Chat Completions answer builds:
    {"content": str, "tool_calls": [{"id", "name", "arguments"}...]}, from
    the answer's lines (bytes)."""
    content, calls = [], {}
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            for tc in delta.get("tool_calls") or []:
                call = calls.setdefault(tc["index"], {"id": None, "name": None, "arguments": ""})
                call["id"] = tc.get("id") or call["id"]
                fn = tc.get("function") or {}
                call["name"] = fn.get("name") or call["name"]
                call["arguments"] += fn.get("arguments") or ""
    return {"content": "".join(content), "tool_calls": [calls[i] for i in sorted(calls)]}


def _stream(messages):
    body = {"model": MODEL, "messages": messages, "tools": [WEATHER_TOOL], "stream": True,
            "stream_options": {"include_usage": True}}
    with _post(body) as resp:
        return parse_sse(resp)


def local_weather(city):
    """The application's own tool: what it answers the model's call with."""
    return {"city": city, "temperature": 21, "unit": "celsius", "condition": "sunny"}


def weather_report(question):
    """A streamed tool round: the model calls get_weather, the application
    answers it, and the model's final text is returned."""
    messages = [{"role": "user", "content": question}]
    first = _stream(messages)
    if not first["tool_calls"]:
        return first["content"]
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in first["tool_calls"]]})
    for c in first["tool_calls"]:
        result = local_weather(**json.loads(c["arguments"]))
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": json.dumps(result)})
    return _stream(messages)["content"]
