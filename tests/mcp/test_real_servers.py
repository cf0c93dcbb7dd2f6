"""The reference MCP servers (mcp-server-git, mcp-server-time, mcp-server-fetch, installed from
requirements-dev.txt) driven through a run: their tools listed, called, and their real answers
given to the model; the fetch server, without "network": true, kept off a listener on 127.0.0.1
by the kernel."""

import socket
import sys
import threading

import pytest
from fake_model import answer, calls
from helpers import git, needs_landlock, results

import harness
from plainagent.sandbox import process as sandbox
from plainagent.sandbox import seccomp


def server(module: str, *args: str, **fields) -> dict:
    """A reference server run by this Python (its venv has them: requirements-dev.txt)."""
    return {"command": sys.executable, "args": ["-m", module, *args], **fields}


def allow(name: str, arguments: dict) -> bool:
    return True


def test_a_run_lists_the_git_servers_tools_and_gets_git_status_of_a_repository_in_the_workspace(
    model, tmp_path
):
    git("init", "-q", cwd=tmp_path)
    (tmp_path / "new.txt").write_text("hello\n")
    model.queue(calls(("git__git_status", {"repo_path": str(tmp_path)})), answer("untracked"))

    harness.run("status?", mcp={"mcpServers": {"git": server("mcp_server_git")}}, approve=allow)

    offered = {tool["function"]["name"] for tool in model.requests[0]["body"]["tools"]}
    assert {"git__git_status", "git__git_log", "git__git_diff_unstaged"} <= offered
    [status] = results(model, 1)
    assert status.startswith("Repository status:\n")
    assert "Untracked files:" in status and "new.txt" in status


def test_the_time_server_answers_a_call(model):
    model.queue(calls(("time__get_current_time", {"timezone": "UTC"})), answer("now"))

    harness.run("time?", mcp={"mcpServers": {"time": server("mcp_server_time")}}, approve=allow)

    [result] = results(model, 1)
    assert '"timezone": "UTC"' in result and '"datetime": "20' in result


class Listener:
    """A TCP listener on 127.0.0.1 that answers each connection with a page, and counts them."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/page"
        self.connections = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            with connection:
                connection.recv(65536)
                body = b"<html><body><p>the listener's page</p></body></html>"
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                    + str(len(body)).encode()
                    + b"\r\nConnection: close\r\n\r\n"
                    + body
                )

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def listener():
    opened = Listener()
    yield opened
    opened.close()


def fetch_server(**fields) -> dict:
    # Straight to the listener: no proxy this machine names, no robots.txt first, and loopback
    # allowed, so that only the sandbox stands between the server and the listener
    no_proxy = {"NO_PROXY": "*", "no_proxy": "*"}
    arguments = ("--ignore-robots-txt", "--allow-private-ips")
    return {"mcpServers": {"fetch": server("mcp_server_fetch", *arguments, env=no_proxy, **fields)}}


@pytest.mark.skipif(
    bool(sandbox.landlock_missing() or seccomp.filter_missing()),
    reason=f"no kernel sandbox here: {sandbox.landlock_missing() or seccomp.filter_missing()}",
)
def test_the_fetch_server_without_network_cannot_reach_a_listener_and_the_model_gets_its_error(
    model, listener
):
    model.queue(calls(("fetch__fetch", {"url": listener.url, "raw": True})), answer("blocked"))

    harness.run("fetch it", mcp=fetch_server(), approve=allow)

    [result] = results(model, 1)
    assert result.startswith("error: MCP server fetch: fetch: ")
    assert listener.connections == 0


def test_the_fetch_server_with_network_reaches_the_listener(model, listener):
    # raw: the page as it came; simplified, the server would first `npm install` into its own
    # package folder where Node is on PATH (readabilipy), which the sandbox refuses
    model.queue(calls(("fetch__fetch", {"url": listener.url, "raw": True})), answer("fetched"))

    harness.run("fetch it", mcp=fetch_server(network=True), approve=allow)

    [result] = results(model, 1)
    assert "the listener's page" in result
    assert listener.connections == 1


@needs_landlock
def test_the_git_server_with_writes_changes_no_repository_outside_the_workspace(
    model, tmp_path, tmp_path_factory
):
    # The model names the repository (repo_path): one outside the workspace is the kernel's to
    # refuse, writes or not
    outside = tmp_path_factory.mktemp("elsewhere")
    git("init", "-q", cwd=outside)
    (outside / "a.txt").write_text("mine\n")
    git("add", "a.txt", cwd=outside)
    git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "one", cwd=outside)
    (outside / "a.txt").write_text("changed\n")
    before = sorted(p.name for p in (outside / ".git" / "refs" / "heads").iterdir())
    model.queue(
        calls(
            ("git__git_status", {"repo_path": str(outside)}),
            ("git__git_add", {"repo_path": str(outside), "files": ["a.txt"]}),
            ("git__git_create_branch", {"repo_path": str(outside), "branch_name": "planted"}),
        ),
        answer("done"),
    )

    mcp = {"mcpServers": {"git": server("mcp_server_git", writes=True)}}
    harness.run("change it", mcp=mcp, approve=allow)

    status, added, branched = results(model, 1, 3)
    # it cannot read the repository (the kernel), so for it there is none
    assert all(r.startswith("error: MCP server git: git_") for r in (status, added, branched))
    assert sorted(p.name for p in (outside / ".git" / "refs" / "heads").iterdir()) == before
    assert "a.txt" not in git("diff", "--cached", "--name-only", cwd=outside)
