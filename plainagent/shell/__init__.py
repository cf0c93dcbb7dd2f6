"""One shell command (phases 1 and 2): words.py reads a command once as the shell would,
allowlist.py says whether it runs without asking (with option_tables.py, and expansion.py for what
the shell makes of globs and cd), decision.py is the one decision the gate makes and the tool is
given, shapes.py what 'always' covers, gitguard.py keeps git in the workspace, pythons.py makes
python, pip and pytest the project's (never the agent's own), command.py runs it as decided, under
the sandbox, and words the result."""
