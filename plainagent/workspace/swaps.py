"""How a write's new file takes its place (phase 2, the guardrails), and how undo's last step leaves
no moment for a person's save to be lost: the file undo replaces or removes is first moved out of
the way, then looked at where it landed, and put back if it changed. Linux's renameat2 exchanges
two names in one step; where it is missing, a file is renamed over the old one after a last look,
which leaves a window a few system calls wide. And what kill -9 left under a new file's name is
cleared."""

import contextlib
import ctypes
import errno
import functools
import os
import re
import secrets
import stat
import sys
import time
import typing

# renameat2's flags (linux/fs.h): fail if the target exists; swap the two names
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
# this kernel, C library or file system has no such rename
NO_SUCH_RENAME = {errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP}
# the name replace_file gives its new file before the rename
NEW_FILE = re.compile(r"\.[0-9a-f]{16}\.agent-write")
# seconds a file of that name is left unwritten before a write in its folder removes it
LEFTOVER_AGE = 60.0
# Looks at a file of the open folder (None: a whole path) by its name; raises to keep it
Look = typing.Callable[[int | None, str], None]


@functools.cache
def renameat2() -> typing.Callable[..., int] | None:
    """The C library's renameat2 (glibc 2.28, musl 1.2.4 and later), loaded once; None where there
    is none."""
    if sys.platform != "linux":
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    name, flags = ctypes.c_char_p, ctypes.c_uint
    function.argtypes = (ctypes.c_int, name, ctypes.c_int, name, flags)
    function.restype = ctypes.c_int
    return function


def rename_in(folder: int, source: str, target: str, flags: int) -> bool:
    """renameat2 within the open folder: True once done; False, nothing changed, where there is no
    such rename here. Other failures raise."""
    call = renameat2()
    if call is None:
        return False
    if call(folder, os.fsencode(source), folder, os.fsencode(target), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in NO_SUCH_RENAME:
        return False
    raise OSError(code, os.strerror(code), target)


def exchanged(folder: int, new: str, target: str, ours: os.stat_result, unchanged: Look) -> bool:
    """Give target the complete file named `new` by exchanging their names, then look at what came
    out, now at `new`: removed if unchanged() passes it, else put back at target (what raised is
    raised again). False, nothing changed, where names cannot be exchanged here."""
    if not rename_in(folder, new, target, RENAME_EXCHANGE):
        return False
    try:
        unchanged(folder, new)
    except BaseException:
        rename_in(folder, new, target, RENAME_EXCHANGE)
        # what stands at `new` now is removed by the caller only if it is ours: a second save
        # made at target meanwhile is left there, and said
        if not os.path.samestat(os.stat(new, dir_fd=folder, follow_symlinks=False), ours):
            raise OSError(
                f"it was saved twice while undo was putting it back: the first save is at its "
                f"name, the second beside it as {new}"
            ) from None
        raise
    os.unlink(new, dir_fd=folder)
    return True


def remove(folder: int | None, target: str, unchanged: Look) -> None:
    """Remove target from the open folder once unchanged() passes it: renamed aside first, looked at
    there again, and put back if it raises then (a save made at target since is kept, and said).
    Where no folder can be opened (Windows), target is a path, removed after the first look."""
    unchanged(folder, target)
    if folder is None:
        os.unlink(target)
        return
    aside = f".{secrets.token_hex(8)}.agent-undo"  # random: nothing of anyone's
    os.rename(target, aside, src_dir_fd=folder, dst_dir_fd=folder)
    try:
        unchanged(folder, aside)
    except BaseException:
        try:
            if not rename_in(folder, aside, target, RENAME_NOREPLACE):
                os.link(aside, target, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
                os.unlink(aside, dir_fd=folder)
        except OSError as error:
            said = error.strerror
            if error.errno == errno.EEXIST:
                said = "a save was made at its name since"
            raise OSError(
                f"it changed while undo was removing it, and is kept beside it as {aside} ({said})"
            ) from None
        raise
    os.unlink(aside, dir_fd=folder)


def remove_folders(folders: list[str]) -> bool:
    """Remove the folders write_file made for a file, innermost first, while they are empty (one
    gone already is passed over); whether any was."""
    removed = False
    for folder in folders:
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            continue
        except OSError:
            break
        removed = True
    return removed


def clear_leftovers(folder: int) -> None:
    """Remove from the open folder the new files of writes killed before their rename (kill -9, a
    power cut): only a file of exactly that name, a regular file with no other name, this user's,
    not written for LEFTOVER_AGE seconds. Called with the folder's lock held, so no run of the agent
    is writing there now."""
    try:
        names = [entry.name for entry in os.scandir(folder) if NEW_FILE.fullmatch(entry.name)]
    except OSError:  # a folder that cannot be listed
        return
    for name in names:
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours to remove: left as it is
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            if (
                stat.S_ISREG(info.st_mode)
                and info.st_nlink == 1
                and info.st_uid == os.geteuid()
                and time.time() - info.st_mtime > LEFTOVER_AGE
            ):
                os.unlink(name, dir_fd=folder)
