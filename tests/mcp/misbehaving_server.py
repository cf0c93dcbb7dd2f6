"""An MCP server of the tests' own that misbehaves as its command line says: exits at start, prints
a banner on stdout, floods stderr, sends a huge result, an image, requests and notifications
nobody asked for (and says how they were answered), dies in the middle of its answer, works
until it is cancelled, lists 500 tools or the same page for ever, sends a line of 12 MB; and
lists tools whose inputSchema has keywords of the wrong kind beside sound ones."""

import json
import os
import sys

FAULTS = set(sys.argv[1:])
# inputSchemas JSON Schema does not allow: a keyword the checker reads, of the wrong kind
BROKEN = {
    "properties-a-string": {"type": "object", "properties": "s"},
    "required-a-number": {"type": "object", "required": 5},
    "allof-a-number": {"type": "object", "allOf": 5},
    "enum-a-number": {"type": "object", "properties": {"s": {"enum": 5}}},
    "type-a-number": {"type": "object", "properties": {"s": {"type": 5}}},
    "ref-a-number": {"type": "object", "properties": {"s": {"$ref": 5}}},
    "anyof-a-number": {"type": "object", "properties": {"s": {"anyOf": 5}}},
    "minimum-a-string": {"type": "object", "properties": {"s": {"minimum": "3"}}},
}
SOUND = {
    "type": "object",
    # an ECMA-262 pattern Python's re cannot read: left to the server, the tool kept
    "properties": {"s": {"type": "string", "pattern": "^\\p{L}+$"}, "n": {"items": [{}]}},
}


CANCELLED: list = []  # the requests the client said it no longer awaits
PENDING: list = []  # messages read while a call waited, handled after it


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(arguments: dict) -> dict:
    if "giant" in FAULTS:  # one line longer than any message may be
        return {"content": [{"type": "text", "text": "z" * 12_000_000}]}
    if "huge" in FAULTS:
        return {"content": [{"type": "text", "text": "y" * 5_000_000}]}
    if "image" in FAULTS:
        return {
            "content": [
                {"type": "image", "data": "aGVsbG8=" * 1000, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///data.bin", "blob": "AAAA"}},
            ]
        }
    return {"content": [{"type": "text", "text": f"echo {json.dumps(arguments)}"}]}


def wait(number: int) -> bool:
    """The `wait` tool: works until the client cancels it (True), or its input ends."""
    for line in sys.stdin:
        message = json.loads(line)
        params = message.get("params") or {}
        if message.get("method") == "notifications/cancelled" and params["requestId"] == number:
            CANCELLED.append(number)
            return True
        PENDING.append(message)
    return False


def messages():
    """What the client sends, one message at a time."""
    while True:
        if PENDING:
            yield PENDING.pop(0)
        elif line := sys.stdin.readline():
            yield json.loads(line)
        else:
            return


def main() -> None:
    if "exit-at-start" in FAULTS:
        print("cannot open the database", file=sys.stderr, flush=True)
        sys.exit(5)
    if "banner" in FAULTS:
        print("Starting server v1.0...", flush=True)
    if "flood" in FAULTS:  # 20 MB on stderr, more than any pipe holds, before it answers
        for _ in range(2000):
            sys.stderr.write("x" * 10_000 + "\n")
        sys.stderr.flush()
    for message in messages():
        method, number = message.get("method"), message.get("id")
        if number is None:
            continue
        if method == "initialize":
            info = {"name": "misbehaving", "version": "1"}
            answer = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": info}
        elif method == "tools/list":
            tools = [{"name": name, "inputSchema": schema} for name, schema in BROKEN.items()]
            sound = [{"name": name, "inputSchema": SOUND} for name in ("echo", "wait", "cancelled")]
            if "many" in FAULTS:
                tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(500)]
            answer = {"tools": [*sound, *tools]}
            if "endless-pages" in FAULTS:  # the same page again and again
                answer["nextCursor"] = "again"
        elif message["params"]["name"] == "wait":
            if wait(number):
                continue  # a cancelled request is not answered
            return
        elif message["params"]["name"] == "cancelled":
            answer = {"content": [{"type": "text", "text": f"cancelled: {CANCELLED}"}]}
        else:
            if "unasked" in FAULTS:
                send({"jsonrpc": "2.0", "id": 99, "method": "sampling/createMessage", "params": {}})
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
                send({"jsonrpc": "2.0", "id": "r", "method": "roots/list"})
                # what the client answered, for the model to see
                answered = [json.loads(sys.stdin.readline()) for _ in range(2)]
                text = json.dumps([[a["id"], a["error"]["code"]] for a in answered])
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": number,
                        "result": {"content": [{"type": "text", "text": text}]},
                    }
                )
                continue
            if "dies" in FAULTS:
                sys.stdout.write(f'{{"jsonrpc": "2.0", "id": {number}, "res')
                sys.stdout.flush()
                os._exit(9)
            answer = result(message["params"].get("arguments") or {})
        send({"jsonrpc": "2.0", "id": number, "result": answer})


if __name__ == "__main__":
    main()
