"""The command line around run(): main.py resolves the flags once and runs a task or a session,
flags.py declares the flags from the settings table, progress.py prints what happens, session.py
reads tasks at a terminal."""
