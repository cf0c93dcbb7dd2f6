"""One MCP server spoken to (beyond the tutorial): JSON-RPC 2.0 over the stdio transport, one
message a line on its stdin and stdout (modelcontextprotocol.io/specification,
basic/transports). A thread reads what it sends: answers to our requests, its pings (answered),
its other requests (refused: this client offers no sampling, roots or elicitation) and
notifications (logging, progress, list changes: let go). Every request waits at most the run's
AGENT_MCP_TIMEOUT, and one timed out or stopped (Ctrl-C) is cancelled at the server; a server
that dies, hangs, prints what is not JSON-RPC or answers with an error is a ServerFailed naming
it, which the loop gives the model as `error: …`."""

import itertools
import json
import os
import subprocess
import threading
import time

from plainagent.core import stop
from plainagent.workspace.writes import Refused

# The revisions whose initialize handshake and tools this client speaks, newest first: it offers
# the first and takes any of them back (lifecycle: version negotiation)
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
CLIENT = {"name": "plainagent", "version": "0.3.0"}
MOST_BYTES = 10_000_000  # of one message; a longer line is junk, not a message
WAIT_SLICE = 0.1  # seconds between looks at whether the run is being stopped
SHOWN = 80  # characters of a junk line, or of the server's stderr, an error quotes
METHOD_NOT_FOUND = -32601


class ServerFailed(Refused):
    """A server that could not answer: dead, hung, junk on stdout, or an error answer; worded for
    the model, naming the server."""


class Reply:
    """An answer awaited: set when it comes, or when the server can no longer send it."""

    def __init__(self) -> None:
        self.came = threading.Event()
        self.message: dict | None = None


class Connection:
    """A started server's process and the requests waiting for its answers."""

    def __init__(self, name: str, process: subprocess.Popen) -> None:
        self.name, self.process = name, process
        self.said = b""  # the end of what it wrote to its stderr (its log), for an error to quote
        self.numbers = itertools.count(1)
        self.waiting: dict[int, Reply] = {}
        self.lock = threading.Lock()  # waiting, broken
        self.writing = threading.Lock()  # one message at a time on its stdin
        self.broken: str | None = None  # why no more answers will come
        self.reader = threading.Thread(target=self.read, name=f"mcp {name}", daemon=True)
        self.reader.start()
        self.drainer = threading.Thread(target=self.drain, name=f"mcp {name} log", daemon=True)
        self.drainer.start()

    def request(self, method: str, params: dict | None, timeout: float) -> dict:
        """The server's result for one request; ServerFailed if it does not come within `timeout`
        seconds, cannot come, or is an error."""
        with self.lock:
            if self.broken is not None:
                raise ServerFailed(self.broken)
            number, reply = next(self.numbers), Reply()
            self.waiting[number] = reply
        message = {"jsonrpc": "2.0", "id": number, "method": method}
        try:
            self.send({**message, "params": params} if params is not None else message)
            deadline = time.monotonic() + timeout
            while not reply.came.wait(max(0.0, min(WAIT_SLICE, deadline - time.monotonic()))):
                stop.check()  # arun()'s task cancelled
                if time.monotonic() >= deadline:
                    self.cancel(number, "timed out")
                    raise ServerFailed(
                        f"MCP server {self.name} did not answer {method} within {timeout:g} s "
                        "(AGENT_MCP_TIMEOUT)"
                    )
        except KeyboardInterrupt:  # Ctrl-C, or arun() cancelled: a session keeps the server
            self.cancel(number, "interrupted")
            raise
        finally:
            with self.lock:
                self.waiting.pop(number, None)
        if reply.message is None:
            raise ServerFailed(self.broken or f"MCP server {self.name} stopped")
        if "error" in reply.message:
            raise ServerFailed(f"MCP server {self.name}: {method}: {error_text(reply.message)}")
        result = reply.message.get("result")
        if not isinstance(result, dict):
            raise ServerFailed(f"MCP server {self.name} answered {method} without a result object")
        return result

    def cancel(self, number: int, reason: str) -> None:
        """Tell the server a request's answer is no longer awaited, so it can stop its work
        (utilities: cancellation); an answer that comes all the same is let go."""
        self.notify("notifications/cancelled", {"requestId": number, "reason": reason})

    def notify(self, method: str, params: dict | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        self.send({**message, "params": params} if params is not None else message)

    def send(self, message: dict) -> None:
        # ASCII, escapes and all: a lone surrogate the model sent is an escape, not an encode error
        line = json.dumps(message, separators=(",", ":")) + "\n"
        try:
            with self.writing:
                assert self.process.stdin is not None  # started with a pipe
                self.process.stdin.write(line.encode("ascii"))
                self.process.stdin.flush()
        except (OSError, ValueError):  # it closed its input, or ended
            self.fail("closed its input")

    def read(self) -> None:
        """The reader thread: each line the server prints, handled, until it ends or prints junk."""
        stdout = self.process.stdout
        assert stdout is not None  # started with a pipe
        try:
            for line in iter(lambda: stdout.readline(MOST_BYTES + 1), b""):
                if len(line) > MOST_BYTES:
                    return self.fail(f"sent a message over {MOST_BYTES:,} bytes")  # closed below
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError):
                    message = None
                if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                    shown = line[:SHOWN].decode("utf-8", "replace").strip()
                    if not line.endswith(b"\n"):  # the last of its stdout, cut: it died writing
                        return self.fail(f"ended in the middle of a message: {shown!r}")
                    return self.fail(f"printed what is not JSON-RPC on its stdout: {shown!r}")
                self.handle(message)
        except (OSError, ValueError):  # its stdout closed under us: we are stopping it
            pass
        finally:
            stdout.close()
        self.fail("ended")

    def drain(self) -> None:
        """The stderr thread: what the server logs, read as it comes (so it never waits on a full
        pipe, and fills no disk), its end kept."""
        stderr = self.process.stderr
        assert stderr is not None  # started with a pipe
        with stderr:
            for chunk in iter(lambda: os.read(stderr.fileno(), 65536), b""):
                self.said = (self.said + chunk)[-4 * SHOWN :]

    def handle(self, message: dict) -> None:
        """One message from the server: an answer for its waiting request, a ping answered, another
        request refused, a notification let go."""
        method, number = message.get("method"), message.get("id")
        if isinstance(method, str):
            if number is None:
                return  # a notification: logging, progress, a changed list
            if method == "ping":
                self.send({"jsonrpc": "2.0", "id": number, "result": {}})
            else:
                error = {"code": METHOD_NOT_FOUND, "message": f"this client offers no {method}"}
                self.send({"jsonrpc": "2.0", "id": number, "error": error})
            return
        with self.lock:
            reply = self.waiting.pop(number, None) if isinstance(number, int) else None
        if reply is not None:
            reply.message = message
            reply.came.set()

    def fail(self, what: str) -> None:
        """No more answers will come: say why, to every request waiting and every later one."""
        reason = f"MCP server {self.name} {what}{self.how_it_ended()}"
        with self.lock:
            self.broken = self.broken or reason
            waiting, self.waiting = list(self.waiting.values()), {}
        for reply in waiting:
            reply.came.set()

    def how_it_ended(self) -> str:
        """Its exit status, if it has ended (waited for briefly), and its stderr's last line."""
        try:
            code = self.process.wait(0.2)
        except subprocess.TimeoutExpired:
            code = None
        said = "" if code is None else f" (exit status {code})"
        if code is not None:
            self.drainer.join(0.2)  # what it said last, read to its end
        lines = self.said.decode("utf-8", "replace").strip().splitlines()
        if lines:
            said += f"; its stderr ends: {lines[-1][-SHOWN:]}"
        return said

    def close_input(self) -> None:
        """Close its stdin, which asks a stdio server to exit (lifecycle: shutdown)."""
        with self.writing:
            try:
                if self.process.stdin is not None:
                    self.process.stdin.close()
            except OSError:
                pass


def error_text(message: dict) -> str:
    """A JSON-RPC error answer in words: its message and code."""
    error = message.get("error")
    if not isinstance(error, dict):
        return f"error {error!r}"
    return f"{error.get('message', 'error')} (code {error.get('code')})"
