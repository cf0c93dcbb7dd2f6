"""One shell command: words.py reads a command as the shell would, allowlist.py decides whether it
runs without asking (with option_tables.py), shapes.py what 'always' covers, gitguard.py keeps git
in the workspace, pythons.py makes python, pip and pytest the project's (never the agent's own),
command.py runs it under the sandbox and words the result."""
