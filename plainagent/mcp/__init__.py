"""Tools from MCP servers (beyond the tutorial), each server a process under the kernel sandbox:
config.py (which servers: mcp.json, --mcp, mcp=), client.py (JSON-RPC over a server's stdin and
stdout), launch.py (its process, sandbox and environment), server_tools.py (its tools as the run's),
servers.py (a run's or a session's servers, started in parallel, stopped with it)."""
