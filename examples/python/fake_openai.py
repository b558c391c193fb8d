"""A fake OpenAI Chat Completions upstream for recording the example's
cassettes without a real key or network: python3 fake_openai.py prints
`fake openai listening on http://127.0.0.1:PORT` and serves until killed.

The bytes copy the layout of real OpenAI answers captured in public test
cassettes (the repository's wire examples: openai-chat-toolcalls.response.json
and .headers.txt from simonw/llm, openai-chat-stream-toolcalls.sse and
openai-chat-stream-text-after-toolresult.sse from pydantic-ai): a
non-streamed answer is 2-space indented JSON ending in a newline; a stream is
`data: {compact JSON}` events separated by blank lines, each chunk with
"usage":null and an "obfuscation" pad, the call's id and name only on its
first delta, a finish chunk with an empty delta, a usage chunk with
"choices":[] and then `data: [DONE]`. Values (ids, times) are made up and
derived from the request, so that the same request gets the same bytes.

It insists on `Authorization: Bearer $FAKE_OPENAI_KEY` (default
sk-example-python-SECRET) and answers 401 in OpenAI's error shape otherwise.
"""

import hashlib
import http.server
import json
import os
import re
import sys

KEY = os.environ.get("FAKE_OPENAI_KEY", "sk-example-python-SECRET")
MODEL = "gpt-4o-mini-2024-07-18"
FINGERPRINT = "fp_d0469e1700"


def _ident(body):
    return hashlib.sha256(body).hexdigest()


def _pad(seed, i):
    """An obfuscation pad of 3-14 letters, as OpenAI sends."""
    h = hashlib.sha1(("%s/%d" % (seed, i)).encode()).hexdigest()
    return "".join(c for c in h if c.isalpha() or c.isdigit())[: 3 + int(h[0], 16) % 12]


def completion(req, ident):
    """A non-streamed chat.completion greeting the person the request names."""
    text = req["messages"][-1]["content"]
    name = re.search(r"hello to (\w+)", text)
    answer = "Hello, %s! How can I help you today?" % (name.group(1) if name else "there")
    body = {
        "id": "chatcmpl-" + ident[:29],
        "object": "chat.completion",
        "created": 1747163251,
        "model": MODEL,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": answer, "refusal": None, "annotations": []},
            "logprobs": None,
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": 12, "completion_tokens": 10, "total_tokens": 22,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }
    return (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def stream_chunks(req, ident):
    """The chunks of a streamed answer: a get_weather call for the city the
    question names, or, after the tool's result, the text about it."""
    base = {"id": "chatcmpl-" + ident[:29], "object": "chat.completion.chunk", "created": 1782955817,
            "model": MODEL, "service_tier": "default", "system_fingerprint": FINGERPRINT}
    last = req["messages"][-1]
    deltas = []
    if last.get("role") == "tool":
        result = json.loads(last["content"])
        text = "It is %s in %s, %d °C." % (result["condition"], result["city"], result["temperature"])
        deltas.append({"role": "assistant", "content": "", "refusal": None})
        deltas += [{"content": piece} for piece in re.findall(r"\S+\s*", text)]
        finish = "stop"
    else:
        city = re.search(r"in ([A-Z][\w-]*)", last["content"])
        args = json.dumps({"city": city.group(1) if city else "unknown"}, separators=(",", ":"))
        deltas.append({"role": "assistant", "content": None, "tool_calls": [{
            "index": 0, "id": "call_" + ident[-24:], "type": "function",
            "function": {"name": "get_weather", "arguments": ""}}], "refusal": None})
        for piece in (args[:2], args[2:6], args[6:9], args[9:]):
            deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
        finish = "tool_calls"
    chunks = [dict(base, choices=[{"index": 0, "delta": d, "logprobs": None, "finish_reason": None}], usage=None)
              for d in deltas]
    chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}],
                       usage=None))
    chunks.append(dict(base, choices=[], usage={
        "prompt_tokens": 78, "completion_tokens": len(deltas), "total_tokens": 78 + len(deltas),
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}))
    for i, c in enumerate(chunks):
        c["obfuscation"] = _pad(ident, i)
        yield ("data: " + json.dumps(c, separators=(",", ":"), ensure_ascii=False) + "\n\n").encode("utf-8")
    yield b"data: [DONE]\n\n"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-openai"

    def log_message(self, *args):
        pass

    def _headers(self, status, ctype, ident, length=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("openai-processing-ms", "574")
        self.send_header("openai-version", "2020-10-01")
        self.send_header("x-ratelimit-limit-requests", "30000")
        self.send_header("x-ratelimit-remaining-requests", "29999")
        self.send_header("x-ratelimit-reset-requests", "2ms")
        self.send_header("x-request-id", "req_" + ident[:32])
        self.end_headers()

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ident = _ident(raw)
        if self.headers.get("Authorization") != "Bearer " + KEY:
            body = (json.dumps({"error": {
                "message": "Incorrect API key provided. You can find your API key at "
                           "https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}, indent=4) + "\n").encode()
            self._headers(401, "application/json; charset=utf-8", ident, len(body))
            self.wfile.write(body)
            return
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        req = json.loads(raw)
        if not req.get("stream"):
            body = completion(req, ident)
            self._headers(200, "application/json", ident, len(body))
            self.wfile.write(body)
            return
        self._headers(200, "text/event-stream; charset=utf-8", ident)
        for event in stream_chunks(req, ident):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Handler)
    print("fake openai listening on http://127.0.0.1:%d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
