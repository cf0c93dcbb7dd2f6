"""--version: the agent's version on stdout, from the clone's pyproject.toml (which a git pull
changes), with no key, no request and no run (an installed copy's comes from its package's metadata:
test_installed.py)."""

import re

from helpers import ROOT, copy_of_the_agent, run_script


def test_version_prints_the_clones_version_and_nothing_else(tmp_path):
    declared = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M)[1]

    result = run_script("harness.py", "--version", cwd=tmp_path)

    assert (result.returncode, result.stdout, result.stderr) == (0, f"plainagent {declared}\n", "")
    assert list(tmp_path.iterdir()) == []


def test_version_follows_the_clones_pyproject_after_a_pull(tmp_path):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / "pyproject.toml").write_text(
        (ROOT / "pyproject.toml").read_text().replace('version = "', 'version = "9.', 1)
    )

    result = run_script("harness.py", "--version", cwd=tmp_path, root=agent)

    assert result.stdout.startswith("plainagent 9."), result.stderr
