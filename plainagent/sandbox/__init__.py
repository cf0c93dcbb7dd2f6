"""The kernel sandbox (beyond the tutorial; Linux): policy.py is the one value that says what a
command may do; process.py starts a command under it in its own process group and sweeps up what it
leaves; landlock.py builds the file system rules from what readable.py says commands may read,
seccomp.py the system-call filter; the child applies them."""
