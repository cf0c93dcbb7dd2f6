"""One shell command: allowlist.py decides whether it runs without asking (with the tables in
option_tables.py), gitguard.py keeps git in the workspace, command.py runs it under the sandbox and
words the result."""
