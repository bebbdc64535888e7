"""Where coopd listens by default (the same rule as the C++ client and the daemon)."""

from __future__ import annotations

import errno
import os
import pwd
import stat
from typing import Optional


def default_socket_path() -> str:
    """``$COOPD_SOCKET``, else ``$XDG_RUNTIME_DIR/coopd/coopd.sock``, else
    ``/tmp/coopd-$UID/coopd.sock``."""
    env = os.environ.get("COOPD_SOCKET")
    if env:
        return env
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "coopd", "coopd.sock")
    return f"/tmp/coopd-{os.getuid()}/coopd.sock"


# The checks of coop/paths.h (client/src/paths.cc), in Python: the socket and its directory must
# be the user's own, so that the token is never sent to another user's listener, and the files
# a client creates beside the socket are never another user's links (docs/security.md, "Other
# local users").

def _owners(owner: int, other_owner: Optional[int], root_ok: bool) -> str:
    names = [str(owner)]
    if other_owner is not None and other_owner != owner:
        names.append(str(other_owner))
    if root_ok and 0 not in (owner, other_owner):
        names.append("0")
    return ", ".join(names)


def unsafe_dir_reason(directory: str, *, owner: int, other_owner: Optional[int] = None,
                      root_ok: bool = False, what: str = "socket directory", who: str = "you",
                      fix: str = "") -> Optional[str]:
    """Why ``directory`` is no safe home for a socket or a file beside it; None when it is, or
    when it does not exist. lstat: a symbolic link is refused, never followed. It must be a
    directory owned by ``owner`` (or ``other_owner``, or root with ``root_ok``) that no one else
    may write (no group- or other-write bit)."""
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{what} {directory}: cannot stat: {e.strerror}; {fix}"
    if stat.S_ISLNK(st.st_mode):
        return f"{what} {directory}: is a symbolic link, not a directory; {fix}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{what} {directory}: not a directory; {fix}"
    if st.st_uid not in (owner, other_owner) and not (root_ok and st.st_uid == 0):
        return (f"{what} {directory}: owned by uid {st.st_uid}, not {who} "
                f"({_owners(owner, other_owner, root_ok)}); {fix}")
    mode = f"{st.st_mode & 0o7777:04o}"
    if st.st_mode & 0o002:
        return (f"{what} {directory}: mode {mode} lets every user write it (it must be writable "
                f"by its owner alone); {fix}")
    if st.st_mode & 0o020:
        return (f"{what} {directory}: mode {mode} lets its group (gid {st.st_gid}) write it (it "
                f"must be writable by its owner alone); {fix}")
    return None


def parse_owner(owner: Optional[str]) -> Optional[int]:
    """A uid for ``socket_owner`` / ``COOPD_SOCKET_OWNER``: a user name or a number."""
    if not owner:
        return None
    if owner.isdigit():
        return int(owner)
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise ValueError(f"socket owner {owner!r} (COOPD_SOCKET_OWNER, socket_owner=) is neither "
                         "a user name from the password database nor a numeric uid") from None


def unsafe_socket_reason(path: str, uid: int, other_owner: Optional[int] = None) -> Optional[str]:
    """Why the Unix socket ``path`` is not one a client running as ``uid`` should send its token
    to; None when it is (or does not exist). The socket (lstat) must be owned by ``uid``,
    ``other_owner`` or root; its directory by one of them or root, writable by no one else, so that no
    one else can replace the socket before gRPC connects to it."""
    fix = "refusing to send your token to it"
    if other_owner is None:
        fix += ("; if a shared coopd runs as that user on purpose, name it in COOPD_SOCKET_OWNER "
                "(ClientOptions::socket_owner, socket_owner=)")
    why = unsafe_dir_reason(os.path.dirname(path) or ".", owner=uid, other_owner=other_owner,
                            root_ok=True, what=f"socket {path}: its directory",
                            who="you, COOPD_SOCKET_OWNER or root" if other_owner is not None
                            else "you or root", fix=fix)
    if why:
        return why
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"socket {path}: cannot stat: {e.strerror}"
    if not stat.S_ISSOCK(st.st_mode):
        link = " (a symbolic link)" if stat.S_ISLNK(st.st_mode) else ""
        return f"socket {path}: not a socket{link}: {fix}"
    # Root's socket (systemd's socket unit makes one) is as trusted as root is.
    if st.st_uid not in (uid, other_owner, 0):
        root = ", root" if uid != 0 else ""
        also = f" or COOPD_SOCKET_OWNER ({other_owner})" if other_owner is not None else ""
        return f"socket {path} is owned by uid {st.st_uid}, not you ({uid}){root}{also}: {fix}"
    return None


def open_own_file(path: str, flags: int) -> int:
    """Opens (creating it 0600) a file only this user may own: O_NOFOLLOW (a symbolic link is
    refused, never followed), then fstat: a regular file owned by the effective uid. Raises
    OSError naming the path otherwise; nothing is written before the checks pass."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        link = " (a symbolic link: refused, never followed)" if e.errno == errno.ELOOP else ""
        raise OSError(e.errno, f"{path}: cannot open: {e.strerror}{link}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
        os.close(fd)
        what = "not a regular file" if not stat.S_ISREG(st.st_mode) else (
            f"owned by uid {st.st_uid}, not {os.geteuid()}")
        raise OSError(errno.EPERM, f"{path}: {what}; remove it")
    return fd


def private_dir(path: str, setting: str) -> str:
    """``path`` as a directory only this user may write: created 0700 when missing (parents
    too), then checked with lstat: a real directory (not a symbolic link), owned by the
    effective uid, with no group- or other-write bit. Raises OSError naming ``path`` and
    ``setting`` (the variable that chooses it) otherwise."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    why = unsafe_dir_reason(path, owner=os.geteuid(), what="directory",
                            fix=f"remove it, or choose another directory with {setting}")
    if why is None and not os.path.isdir(path):
        why = f"directory {path}: vanished while it was checked"
    if why:
        raise OSError(errno.EPERM, why)
    return path
