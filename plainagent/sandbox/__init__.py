"""The kernel sandbox (Linux): process.py starts a command in its own process group and sweeps up
what it leaves; landlock.py builds the file system rules from what readable.py says commands may
read, seccomp.py the system-call filter; the child applies them."""
