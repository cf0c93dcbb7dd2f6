"""A scripted OpenAI-compatible server on 127.0.0.1 that stands in for Groq in the tests.
Each test queues replies in order; the server records every request body and every TCP connection,
and answers 400 (and remembers it) when a request arrives that the script has no reply for."""

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    413: "Request Entity Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


def completion(message: dict, finish_reason: str = "stop", usage: dict | None = None) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "openai/gpt-oss-120b",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def answer(text: str | None, **kwargs) -> dict:
    """A reply with no tool calls. Like Groq's, it carries a `reasoning` field the
    API will not take back."""
    return {"body": completion({"content": text, "reasoning": "thinking..."}, **kwargs)}


def calls(*calls: tuple[str, dict | str], usage: dict | None = None) -> dict:
    """A reply asking for tools; arguments given as a dict are sent as a JSON
    string, a str as it is."""
    tool_calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for i, (name, args) in enumerate(calls, 1)
    ]
    return {
        "body": completion(
            {"content": None, "reasoning": "I should call a tool.", "tool_calls": tool_calls},
            finish_reason="tool_calls",
            usage=usage,
        )
    }


CUT = "cut"  # in a stream: the server closes the connection there, the reply unfinished


def chunk(delta: dict | None, finish_reason: str | None = None, usage: dict | None = None) -> dict:
    """One chunk of a streamed reply: a choice holding the delta, or none (the usage alone)."""
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    )
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "openai/gpt-oss-120b",
        "choices": choices,
    }
    return body | ({"usage": usage} if usage else {})


def stream(
    *pieces,
    pause: float = 0.0,
    finish_reason: str = "stop",
    usage: dict | None = None,
) -> dict:
    """A reply sent as server-sent events, `pause` seconds apart (the first one too), as Groq
    streams: each piece is the answer's next text (a str), a chunk's delta (a dict: reasoning,
    tool_calls), ("split", text): the text in one event whose bytes come in two writes cut inside
    its first character of more than one byte, ("error", {...}): an error in place of a chunk, or
    CUT: the connection closed there. Then the finish reason, the usage alone in the last chunk
    (stream_options.include_usage), and [DONE]."""
    events: list = []
    for piece in pieces:
        if isinstance(piece, str) and piece != CUT:
            events.append(chunk({"content": piece}))
        elif isinstance(piece, dict):
            events.append(chunk(piece))
        elif isinstance(piece, tuple) and piece[0] == "error":
            events.append({"error": piece[1]})
        else:
            events.append(piece)  # CUT, or ("split", text)
    events += [
        chunk({}, finish_reason),
        chunk(
            None, usage=usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        ),
        "[DONE]",
    ]
    return {"stream": events, "pause": pause}


def call_pieces(index: int, call_id: str, name: str, arguments: str, parts: int) -> list[dict]:
    """A tool call's deltas as a server streams them: id and name with the first, the arguments in
    `parts` pieces."""
    size = -(-len(arguments) // parts)
    cut = [arguments[i : i + size] for i in range(0, len(arguments), size)]
    first = {"index": index, "id": call_id, "type": "function", "function": {"name": name}}
    return [{"tool_calls": [first]}] + [
        {"tool_calls": [{"index": index, "function": {"arguments": part}}]} for part in cut
    ]


def error(
    status: int,
    message: str,
    code: str | None = None,
    headers: dict | None = None,
    type: str = "invalid_request_error",
    **extra,
) -> dict:
    """An error in Groq's shape: {"error": {"message", "type", "code", ...}}."""
    return {
        "status": status,
        "headers": headers or {},
        "body": {"error": {"message": message, "type": type, "code": code, **extra}},
    }


class FakeModel:
    def __init__(self, keep_bodies: bool = True) -> None:
        self.keep_bodies = (
            keep_bodies  # the benchmark keeps none: its memory counts in every child's peak RSS
        )
        self.script: deque[dict] = deque()
        self.requests: list[dict] = []
        self.connections = 0
        self.unscripted: list[dict] = []
        self.timeline: list[tuple[str, float]] = []  # ("received" | "sent", time.perf_counter())
        # For runs at once, whose requests arrive in any order: a function of the request body that
        # returns the reply, used instead of the queue.
        self.router: Callable[[dict], dict] | None = None
        self.lock = threading.Lock()
        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def queue(self, *replies: dict) -> "FakeModel":
        self.script.extend(replies)
        return self

    def messages(self, i: int) -> list[dict]:
        """The `messages` of the i-th request received."""
        return self.requests[i]["body"]["messages"]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class QuietServer(ThreadingHTTPServer):
    request_queue_size = (
        64  # socketserver's 5 drops the connections of runs starting at once: 1 s to try again
    )

    def handle_error(self, request, client_address) -> None:
        pass  # a client that gave up on a slow reply is what those tests expect, not news


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so connections can be counted

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.fake.lock:
            self.server.fake.connections += 1

    def do_POST(self) -> None:
        fake = self.server.fake
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with fake.lock:
            fake.timeline.append(("received", time.perf_counter()))
            parsed = json.loads(body or b"{}")
            request = {
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": parsed if fake.keep_bodies else None,
            }
            fake.requests.append(request)
            reply = (
                fake.router(request["body"])
                if fake.router
                else fake.script.popleft()
                if fake.script
                else None
            )
            if reply is None:
                fake.unscripted.append(request)
                reply = error(
                    400, f"fake model: no reply scripted for request {len(fake.requests)}"
                )
        if "stream" in reply:
            self.send_stream(reply)
            return
        if reply.get("silent"):  # a server that takes the request and never answers
            time.sleep(reply["silent"])
            return
        time.sleep(reply.get("delay", 0))
        payload = reply["body"]
        data = (
            payload
            if isinstance(payload, bytes)
            else payload.encode()
            if isinstance(payload, str)
            else json.dumps(payload).encode()
        )
        status = reply.get("status", 200)
        headers = {
            "Content-Type": "text/html" if isinstance(payload, str) else "application/json",
            "Content-Length": str(len(data)),
            **reply.get("headers", {}),
        }
        head = f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        # a server that sends its body a byte at a time, this many seconds apart
        if reply.get("trickle"):
            self.wfile.write(head.encode())
            for byte in data:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(reply["trickle"])
            return
        # One write per reply: split writes meet delayed ACK and add ~40 ms to every step.
        self.wfile.write(head.encode() + data)
        with fake.lock:
            fake.timeline.append(("sent", time.perf_counter()))

    def send_stream(self, reply: dict) -> None:
        """The reply as server-sent events, each in an HTTP chunk of its own, written as it comes,
        each write recorded in the timeline as ("piece", time)."""
        fake = self.server.fake
        time.sleep(reply.get("delay", 0))
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        )
        self.wfile.write(head.encode())
        for event in reply["stream"]:
            time.sleep(reply["pause"])
            if event == CUT:
                self.close_connection = True
                self.wfile.flush()
                self.request.shutdown(socket.SHUT_RDWR)
                return
            if isinstance(event, tuple):  # ("split", text)
                data = f"data: {json.dumps(chunk({'content': event[1]}), ensure_ascii=False)}\n\n"
                encoded = data.encode()
                at = data.index(next(c for c in event[1] if len(c.encode()) > 1))
                middle = len(data[:at].encode()) + 1
                writes = [encoded[:middle], encoded[middle:]]
            else:
                text = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
                writes = [f"data: {text}\n\n".encode()]
            for i, data in enumerate(writes):
                if i:
                    time.sleep(reply["pause"])
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            with fake.lock:
                fake.timeline.append(("piece", time.perf_counter()))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, *args) -> None:
        pass
