"""An MCP server of the tests' own, speaking the stdio transport with the standard library: its
tools do what a test needs a server to do (write or read a file, crash, hang, print junk, say its
process group), and it pings the client and pages its tools/list as the specification allows."""

import json
import os
import subprocess
import sys
import time


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value: str, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": error}


def object_schema(**properties: str) -> dict:
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }


PAGES = [
    [
        {
            "name": "write",
            "description": "Write a file",
            "inputSchema": object_schema(path="string"),
        },
        {"name": "crash", "description": "Exit mid-call", "inputSchema": object_schema()},
        {"name": "hang", "description": "Never answer", "inputSchema": object_schema()},
    ],
    [
        {"name": "junk", "description": "Print junk", "inputSchema": object_schema()},
        {"name": "group", "description": "Say its pid and group", "inputSchema": object_schema()},
        {
            "name": "add",
            "description": "Add",
            "inputSchema": object_schema(a="integer", b="integer"),
        },
        {"name": "env", "description": "A variable", "inputSchema": object_schema(name="string")},
        {"name": "read", "description": "Read a file", "inputSchema": object_schema(path="string")},
        {
            "name": "broken",
            "description": "A schema not of an object",
            "inputSchema": {"type": "string"},
        },
    ],
]


def call(name: str, arguments: dict) -> dict:
    if name == "write":
        try:
            with open(arguments["path"], "w") as file:
                file.write("written by the MCP server\n")
        except OSError as error:
            return text(f"could not write: {error}", error=True)
        return text("written")
    if name == "read":
        try:
            with open(arguments["path"]) as file:
                return text(file.read())
        except OSError as error:
            return text(f"could not read: {error}", error=True)
    if name == "crash":
        print("crashing now", file=sys.stderr, flush=True)
        os._exit(3)
    if name == "hang":
        time.sleep(3600)
    if name == "junk":
        sys.stdout.write("this is not JSON\n")
        sys.stdout.flush()
        time.sleep(3600)
    if name == "group":
        # A child in its group, which outlives its stdin closed: only killing the group ends it
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        return {
            "content": [{"type": "text", "text": "see structuredContent"}],
            "structuredContent": {"pid": os.getpid(), "group": os.getpgid(0), "child": child.pid},
        }
    if name == "env":
        if not arguments["name"].isascii():
            return text(f"(not a name: {arguments['name']!r})")
        return text(os.environ.get(arguments["name"], "(not set)"))
    if name == "add":
        # The client must answer a ping sent while its call waits
        send({"jsonrpc": "2.0", "id": "ping-1", "method": "ping"})
        send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "adding"},
            }
        )
        reply = json.loads(sys.stdin.readline())
        if reply.get("id") != "ping-1" or reply.get("result") != {}:
            return text(f"the ping was answered with {reply}", error=True)
        return text(str(arguments["a"] + arguments["b"]))
    return text(f"no tool {name}", error=True)


def main() -> None:
    if "silent" in sys.argv:  # a server that never answers, not even initialize
        time.sleep(3600)
    for line in sys.stdin:
        message = json.loads(line)
        method, number = message.get("method"), message.get("id")
        if number is None:
            continue  # a notification
        if method == "initialize":
            # the version it speaks: version=... on its command line, else one the client offers
            spoken = [arg.split("=", 1)[1] for arg in sys.argv if arg.startswith("version=")]
            result = {
                "protocolVersion": spoken[0] if spoken else "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "script-server", "version": "1"},
            }
        elif method == "tools/list":
            page = int((message.get("params") or {}).get("cursor") or 0)
            result = {"tools": PAGES[page]}
            if page + 1 < len(PAGES):
                result["nextCursor"] = str(page + 1)
        elif method == "tools/call":
            params = message["params"]
            result = call(params["name"], params.get("arguments") or {})
        else:
            send({"jsonrpc": "2.0", "id": number, "error": {"code": -32601, "message": "unknown"}})
            continue
        send({"jsonrpc": "2.0", "id": number, "result": result})


if __name__ == "__main__":
    main()
