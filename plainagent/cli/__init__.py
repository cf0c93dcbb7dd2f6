"""The command line around run() (beyond the tutorial): main.py resolves the flags once and runs
a task or a session, conversation.py keeps what a session keeps between tasks, flags.py declares
the flags from the settings, progress.py prints what happens, live.py shows a reply as it arrives
and counts the seconds of long waits, session.py reads tasks at a terminal, signals.py stops a run
on SIGTERM and SIGHUP as on Ctrl-C."""
