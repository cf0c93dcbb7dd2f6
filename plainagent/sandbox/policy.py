"""The sandbox's policy (beyond the tutorial): one value that says what a command may do, which
process.popen() applies in the child in named steps (no_new_privs, Landlock, the seccomp filter)."""

import dataclasses
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Policy:
    """What one command may do. `mode`: the Landlock mode (landlock.READ_ONLY, WORKSPACE_WRITE, or
    None for none), which lets it read the `workspace` and the system and write its private `tmp`
    (and, in WORKSPACE_WRITE, the workspace), but never read the `hidden` files (the agent's .env)
    nor write the `protected` paths (the transcripts); `seccomp`: the filter (seccomp.NO_NETWORK,
    seccomp.NO_CHANGES, or None for none); `unprivileged` (Linux): no capabilities, even as root;
    `network`: TCP stays open in READ_ONLY too (an MCP server with "network": true, mcp/)."""

    workspace: Path
    tmp: Path
    mode: str | None = None
    hidden: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    seccomp: str | None = None
    unprivileged: bool = False
    network: bool = False
