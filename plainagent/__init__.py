"""The layers that wrap around the tutorial's four files (backend.py, tools.py, harness.py,
probe.py), one folder each, listed from the ground up; a folder imports only folders above it in
this list, never the four files:

    core/       what every layer uses: the settings, the agent's own files, what a person is shown
    calls/      a tool call checked: a function's schema, the model's arguments against it (phase 5)
    sandbox/    the kernel sandbox: a command's process under Landlock and seccomp
    workspace/  the workspace on disk: confined paths, whole-or-nothing writes, edits, undo
    shell/      one shell command: the allowlist and its option tables, git kept harmless, the run
itself
    approval/   phase 2: the one gate a tool call passes, the question a person answers, its
previews
    model/      the model beyond phase 0: the client's deadline, retries for the free plan, the
context budget
    runs/       what a run leaves behind: transcripts, the run list, --continue reading them back
    cli/        the command line and the terminal session around run()
"""
