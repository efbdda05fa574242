"""Files devicelint writes for itself (the result cache, the rule catalogue).

They hold data only: JSON behind a one-line header with a BLAKE2b checksum of the body, so a
file changed by a single byte (disk corruption, a stray edit) reads as absent instead of being
served. Nothing here unpickles or evaluates anything. The checksum is not a signature: whoever
can write the file can also write a valid one, so readers still check every value they use.

`SafeDir` reads and writes inside one directory without following symbolic links: the
directory is opened once (every component below a trusted base with O_NOFOLLOW), and each file
is opened relative to that handle with O_NOFOLLOW, new files with O_CREAT|O_EXCL. A link
planted where devicelint writes (`CACHEDIR.TAG -> ~/notes.txt`, a dangling `.gitignore`, a
cache directory that is itself a link) is refused rather than followed.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from typing import Any, Iterator, Optional

# Hashing without OpenSSL where little is hashed: `import hashlib` (and hmac) loads
# _hashlib, whose set-up costs ~11M instructions, ~4% of a run that parses nothing (it
# hashes a few short texts: the rules' signature, the settings). Python's own SHA-256 and
# BLAKE2 give the same digests; its SHA-256 is ~6x slower per byte than OpenSSL's
# hardware-assisted one, so a process hashes with it until it has hashed
# SHA256_BUILTIN_BYTES (a warm run hashes every file: timm's 5.5 MB), then with hashlib's.
try:
    from _sha2 import sha256 as _builtin_sha256  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256 as _builtin_sha256
    except ImportError:  # a Python built without it
        _builtin_sha256 = None
try:
    from _blake2 import blake2b
except ImportError:
    from hashlib import blake2b

SHA256_BUILTIN_BYTES = 128 * 1024
_sha256_bytes = 0  # hashed by `sha256` in this process


def sha256(data: bytes):
    """hashlib.sha256(data): OpenSSL's once this process has hashed SHA256_BUILTIN_BYTES."""
    global _sha256_bytes
    _sha256_bytes += len(data)
    if _builtin_sha256 is None or _sha256_bytes > SHA256_BUILTIN_BYTES:
        import hashlib

        return hashlib.sha256(data)
    return _builtin_sha256(data)

MAGIC = b"devicelint-data"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted under a cache name must not block the open
_BINARY = getattr(os, "O_BINARY", 0)
_HAVE_DIR_FD = os.open in os.supports_dir_fd and os.replace in os.supports_dir_fd and bool(_NOFOLLOW)


def _digest(kind: bytes, body: bytes) -> bytes:
    return blake2b(kind + b"\n" + body, digest_size=16).hexdigest().encode()


def encode(kind: str, payload: Any) -> bytes:
    """`payload` as checksummed JSON; `kind` names the format (and its version)."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()
    tag = kind.encode()
    return b" ".join((MAGIC, tag, _digest(tag, body))) + b"\n" + body


def decode(kind: str, data: Optional[bytes]) -> Any:
    """The payload of `encode(kind, ...)`, or None when `data` is anything else (truncated,
    mutated, another format, not JSON)."""
    if not data:
        return None
    header, newline, body = data.partition(b"\n")
    parts = header.split(b" ")
    tag = kind.encode()
    if not newline or len(parts) != 3 or parts[0] != MAGIC or parts[1] != tag:
        return None
    if parts[2] != _digest(tag, body):  # a checksum against damage, not a secret: == will do
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError, MemoryError):
        return None


class SafeDir:
    """One directory, opened without following links; files inside it by name only."""

    def __init__(self, fd: Optional[int], path: str) -> None:
        self.fd = fd  # None where the platform has no dir_fd support (path-based fallback)
        self.path = path

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def inside(cls, base: str, parts: tuple[str, ...], create: bool) -> Optional["SafeDir"]:
        """`base/parts[0]/parts[1]/...`, each part a real directory (not a link), created
        when `create`. None if a part is missing (and not `create`). Raises `UnsafePath` when a
        part is a symbolic link or not a directory."""
        for part in parts:
            if part in ("", ".", "..") or "/" in part or (os.sep in part) or (os.altsep and os.altsep in part):
                raise UnsafePath(f"bad path component {part!r}")
        if not _HAVE_DIR_FD:
            return cls._inside_by_path(base, parts, create)
        try:
            fd = os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        except OSError:
            return None
        path = base
        try:
            for part in parts:
                path = os.path.join(path, part)
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                except FileNotFoundError:
                    os.close(fd)
                    return None
                except OSError as error:
                    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise UnsafePath(f"{path} is a symbolic link or not a directory") from None
                    raise
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    @classmethod
    def _inside_by_path(cls, base: str, parts: tuple[str, ...], create: bool) -> Optional["SafeDir"]:
        path = base
        for part in parts:
            path = os.path.join(path, part)
            if create:
                try:
                    os.mkdir(path, 0o755)
                except FileExistsError:
                    pass
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                return None
            if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
                raise UnsafePath(f"{path} is a symbolic link or not a directory")
        return cls(None, path)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "SafeDir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- files -----------------------------------------------------------------------------
    def _open(self, name: str, flags: int, mode: int = 0o644) -> int:
        if "/" in name or os.sep in name or name in ("", ".", ".."):
            raise UnsafePath(f"bad file name {name!r}")
        flags |= _NOFOLLOW | _CLOEXEC | _BINARY
        if self.fd is not None:
            return os.open(name, flags, mode, dir_fd=self.fd)
        path = os.path.join(self.path, name)
        if os.path.islink(path):
            raise OSError(errno.ELOOP, "is a symbolic link", path)
        return os.open(path, flags, mode)

    def read(self, name: str, limit: int) -> Optional[bytes]:
        """The bytes of the regular file `name` (at most `limit`), or None: missing, a link,
        a FIFO or device, too large, unreadable."""
        try:
            fd = self._open(name, os.O_RDONLY | _NONBLOCK)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
                return None
            chunks = []
            left = limit + 1
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
            return None if len(data) > limit else data
        except OSError:
            return None
        finally:
            os.close(fd)

    def stat(self, name: str) -> Optional[os.stat_result]:
        try:
            if self.fd is not None:
                return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return os.lstat(os.path.join(self.path, name))
        except OSError:
            return None

    def create(self, name: str, data: bytes) -> bool:
        """Write a new file `name`; nothing happens if anything (a file, a link, dangling or
        not) already has that name. True if written."""
        try:
            fd = self._open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except OSError:
            return False
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        return True

    def replace(self, name: str, data: bytes) -> None:
        """Atomically make `name` hold `data`: a new temporary file (O_EXCL, never a link)
        renamed over it. A link named `name` is replaced, never followed. Raises OSError."""
        import secrets  # only when writing (a warm run that changed nothing writes nothing)

        temp = f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
        fd = self._open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            if self.fd is not None:
                os.replace(temp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            else:
                os.replace(os.path.join(self.path, temp), os.path.join(self.path, name))
        except BaseException:
            self.unlink(temp)
            raise

    def unlink(self, name: str) -> None:
        try:
            if self.fd is not None:
                os.unlink(name, dir_fd=self.fd)
            else:
                os.unlink(os.path.join(self.path, name))
        except OSError:
            pass

    def names(self) -> Iterator[str]:
        try:
            listing = os.listdir(self.fd if self.fd is not None else self.path)
        except OSError:
            return iter(())
        return iter(listing)


def bytecode_dir(package_dir: str, create: bool) -> Optional[SafeDir]:
    """The folder where Python keeps the bytecode of the package at `package_dir`
    (its `__pycache__`, or the mirror under `sys.pycache_prefix`), for what devicelint derives
    from its own files (the parsed API table, compiled dataclass methods): whoever can write
    there can change devicelint itself. None where it cannot be opened or made."""
    import sys

    package = os.path.abspath(package_dir)
    if sys.pycache_prefix:
        base, parts = sys.pycache_prefix, tuple(part for part in package.split(os.sep) if part)
    else:
        base, parts = package, ("__pycache__",)
    try:
        return SafeDir.inside(base, parts, create=create)
    except (UnsafePath, OSError):
        return None


def parsed_once(path: str, parse: Any, kind: str) -> Any:
    """`parse(the bytes of path)`, for a file of devicelint's own package (torch_api.toml):
    read back from a JSON copy in its bytecode folder (`bytecode_dir`) when the copy was made
    from these very bytes (their SHA-256), written there otherwise, as Python writes `.pyc`
    files (not when told to write no bytecode). The result must survive JSON (dicts, lists,
    strings, numbers, booleans)."""
    import sys

    with open(path, "rb") as handle:
        source = handle.read()
    digest = sha256(source).hexdigest()
    name = os.path.basename(path) + ".json"
    folder = bytecode_dir(os.path.dirname(path), create=False)
    if folder is not None:
        with folder:
            copy = decode(kind, folder.read(name, 16 << 20))
        if isinstance(copy, dict) and copy.get("sha256") == digest and "data" in copy:
            return copy["data"]
    data = parse(source)
    if not sys.dont_write_bytecode:
        folder = bytecode_dir(os.path.dirname(path), create=True)
        if folder is not None:
            try:
                with folder:
                    folder.replace(name, encode(kind, {"sha256": digest, "data": data}))
            except (OSError, TypeError, ValueError):
                pass  # a read-only installation, or data JSON cannot hold: parsed each time
    return data


class UnsafePath(Exception):
    """A directory devicelint would write into is a symbolic link, or leaves where it must stay."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
