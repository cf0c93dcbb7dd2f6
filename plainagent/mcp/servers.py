"""A run's MCP servers (beyond the tutorial), entered once per run (served()): each configured
server started at once, in parallel, initialized (the protocol version negotiated), its tools
listed page by page (at most MOST_TOOLS of them all); stopped with the run, or, started by a
session (Servers), with the session. A server that cannot start is a note at the run's start,
and the run goes on without it."""

import concurrent.futures
import contextlib
import dataclasses
import typing

from plainagent.calls.schema import Tool
from plainagent.core.settings import Settings
from plainagent.mcp.client import CLIENT, SHOWN, VERSIONS, ServerFailed
from plainagent.mcp.config import ServerConfig, read_config
from plainagent.mcp.launch import Started, start, stop
from plainagent.mcp.server_tools import mcp_tool
from plainagent.sandbox import process as sandbox

MOST_PAGES = 100  # of tools/list: a server whose cursor never ends has this many
API_TOOLS = 128  # the most tools one request may offer (OpenAI, Groq): more is a 400, every step
MOST_TOOLS = 100  # of all the servers' tools together: the rest is the agent's own, or a script's
STOP_GRACE = 1.0  # seconds a server has to exit once its input is closed, before it is killed


@dataclasses.dataclass
class Served:
    """What one run gets of its servers: their tools, and notes for its start."""

    tools: list[Tool] = dataclasses.field(default_factory=list)
    notes: tuple[str, ...] = ()

    def given(self, settings: Settings) -> Settings:
        """The run's settings with these tools, and these notes among theirs for its start."""
        notes = (*settings.notes, *self.notes)
        return dataclasses.replace(settings, mcp_tools=tuple(self.tools), notes=notes)


class Servers:
    """The servers of a config, started: a run's (served()) or a whole session's (the command
    line). Their tools, and what went wrong starting each other one, are kept until close()."""

    def __init__(self, configs: typing.Sequence[ServerConfig], settings: Settings) -> None:
        self.settings = settings
        self.started: list[Started] = []
        self.closing = False  # set on Ctrl-C while they start: a server started then stops
        self.served = Served()
        if not configs:
            return
        notes = [] if sandbox.confines(settings) else [unconfined(settings)]
        pool = concurrent.futures.ThreadPoolExecutor(len(configs), thread_name_prefix="mcp")
        try:
            futures = [pool.submit(self.connect, config) for config in configs]
            for config, future in zip(configs, futures, strict=True):
                try:
                    made = future.result()
                except ServerFailed as failure:
                    notes.append(f"{failure}; its tools are left out")
                    continue
                notes += [note for note in made if isinstance(note, str)]
                listed = [tool for tool in made if isinstance(tool, Tool)]
                room = MOST_TOOLS - len(self.served.tools)
                if len(listed) > room:
                    notes.append(
                        f"MCP server {config.name} listed {len(listed)} tools; {room} are kept, "
                        f"as the model's API takes {API_TOOLS} tools a request and the agent's "
                        "own need room"
                    )
                self.served.tools += listed[:room]
        except BaseException:  # Ctrl-C while they start: none outlives it, none waits for long
            self.closing = True
            self.close()  # what they wait for from the started ones fails now
            pool.shutdown(wait=True, cancel_futures=True)
            self.close()  # and any started meanwhile
            raise
        pool.shutdown()
        self.served.notes = tuple(notes)

    def connect(self, config: ServerConfig) -> list[Tool | str]:
        """Start one server, initialize it and list its tools (a note for each left out); one
        that fails is stopped at once (as close() does: twice is safe)."""
        started = start(config, self.settings)
        self.started.append(started)  # list.append is atomic: the threads share it
        try:
            if self.closing:
                raise ServerFailed(f"MCP server {config.name}: the run is stopping")
            return self.listed(config, started)
        except BaseException:
            stop(started, 0)
            raise

    def listed(self, config: ServerConfig, started: Started) -> list[Tool | str]:
        """A started server initialized (the protocol version negotiated), and its tools."""
        connection, timeout = started.connection, self.settings.mcp_timeout
        offer = {"protocolVersion": VERSIONS[0], "capabilities": {}, "clientInfo": CLIENT}
        answer = connection.request("initialize", offer, timeout)
        version = answer.get("protocolVersion")
        if version not in VERSIONS:
            raise ServerFailed(
                f"MCP server {config.name} speaks protocol {version!r}, which this agent does not "
                f"({', '.join(VERSIONS)})"
            )
        connection.notify("notifications/initialized")
        tools: list[Tool | str] = []
        names: set[str] = set()  # the tools' names, and the notes given
        cursor: str | None = None
        cursors: set[str] = set()
        for _ in range(MOST_PAGES):
            page = connection.request("tools/list", {"cursor": cursor} if cursor else {}, timeout)
            listed = page.get("tools")
            if not isinstance(listed, list):
                raise ServerFailed(f"MCP server {config.name} listed no tools array")
            for described in listed:
                made = mcp_tool(config, described, started, self.settings)
                if isinstance(made, Tool) and made.name in names:
                    made = (
                        f"MCP server {config.name} listed {made.name} twice; the second is left out"
                    )
                if isinstance(made, str) and made in names:
                    continue  # a note given already, for a page sent again
                names.add(made.name if isinstance(made, Tool) else made)
                tools.append(made)
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
            if cursor in cursors:  # the same pages again, for ever: their notes once
                tools.append(
                    f"MCP server {config.name} sent the cursor {cursor[:SHOWN]!r} a second time; "
                    "its tools are those of the pages before"
                )
                break
            cursors.add(cursor)
        else:
            tools.append(
                f"MCP server {config.name} listed more than {MOST_PAGES} pages of tools; the rest "
                "are left out"
            )
        return tools

    def for_a_run(self) -> Served:
        """What the next run of a session gets: the tools, and the notes only the first time."""
        served, self.served = self.served, Served(self.served.tools)
        return served

    def close(self) -> None:
        """Stop every server, in parallel: input closed, a moment to exit, then its process group
        killed. Safe to call twice."""
        started, self.started = self.started, []
        if started:
            with concurrent.futures.ThreadPoolExecutor(len(started)) as pool:
                list(pool.map(lambda one: stop(one, STOP_GRACE), started))


@contextlib.contextmanager
def served(settings: Settings) -> typing.Iterator[Settings]:
    """A run's servers, entered once by the loop, which gets its settings with their tools: the
    session's (settings.mcp is a Servers), kept running after it; else those settings.mcp
    configures (a file, a dict, or by default the configuration folder's mcp.json), started now
    and stopped when the run ends, however it ends. ConfigError for a config that is not one."""
    if isinstance(settings.mcp, Servers):
        yield settings.mcp.for_a_run().given(settings)
        return
    servers = Servers(read_config(settings.mcp), settings)
    try:
        yield servers.served.given(settings)
    finally:
        servers.close()


def unconfined(settings: Settings) -> str:
    """The one note where the servers run without the kernel sandbox."""
    why = "--sandbox off" if settings.sandbox == "off" else sandbox.landlock_missing()
    return (
        f"MCP servers run without the kernel sandbox here ({why}): they can read, write and reach "
        "whatever you can"
    )
