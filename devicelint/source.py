"""Reading, decoding and writing user files, and cutting text into lines as Python does.
No libcst: a run whose files are cached or hold no PyTorch code never pays for the parser."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tokenize
from typing import Callable, Optional


# Python's tokenizer (and libcst, and CPython's parser) end a line at \n, \r\n or \r only.
# str.splitlines() also splits at \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029, which may sit
# inside a string literal or a comment: line numbers computed with it drift from the
# parser's, and an edit meant for line N lands on another line.
LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_OTHER_BREAKS_RE = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """`text` cut into lines as Python's tokenizer numbers them: like `str.splitlines`, but
    only \n, \r\n and \r end a line. Use this, never `splitlines()`, on user source."""
    if not _OTHER_BREAKS_RE.search(text):
        return text.splitlines(keepends)  # same result, faster
    lines = _LINE_RE.findall(text)
    if keepends:
        return lines
    return [line.rstrip("\r\n") for line in lines]


def line_starts(text: str) -> list[int]:
    """Offset of the first character of each line of `text` (tokenizer's numbering)."""
    return [0] + [match.end() for match in LINE_BREAK_RE.finditer(text)]


def readline(text: str) -> Callable[[], str]:
    """A `readline` for `tokenize.generate_tokens` that splits lines as the parser does
    (`io.StringIO(text).readline` splits at \n only, so a \r-only file is one line)."""
    lines = iter(split_lines(text, keepends=True))
    return lambda: next(lines, "")


def in_package_directory(path: str) -> bool:
    """Whether the file at `path` (on disk) is a module of a package: its directory holds an
    `__init__.py`. Notebooks and standard input never are."""
    if not path.endswith(".py") or path in ("-", "<stdin>"):
        return False
    try:
        return os.path.isfile(os.path.join(os.path.dirname(path) or ".", "__init__.py"))
    except (OSError, ValueError):
        return False


def decode_source(data: bytes) -> str:
    """Decode like Python does: BOM, PEP 263 cookie, else UTF-8. Raises ValueError."""
    if b"\0" in data:
        raise ValueError("file contains NUL bytes")
    try:
        encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)
    except SyntaxError as error:
        raise ValueError(_encoding_problem(data, error)) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise ValueError(_bad_byte(data, error.start, encoding)) from None
    except LookupError as error:
        raise ValueError(f"not valid {encoding}: {error}") from None
    return text[1:] if text.startswith("\ufeff") else text


def _encoding_problem(data: bytes, error: SyntaxError) -> str:
    """tokenize says "invalid or missing encoding declaration" both for a bad cookie and for
    plain non-UTF-8 bytes; say which, and where the first bad byte is."""
    if b"coding" in data[:400]:
        return str(error).replace(" for None", "")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return _bad_byte(data, bad.start, "utf-8")
    return str(error)


def _bad_byte(data: bytes, offset: int, encoding: str) -> str:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    name = "UTF-8" if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig") else encoding
    cookie = " and no PEP 263 coding cookie" if name == "UTF-8" and b"coding" not in data[:400] else ""
    return f"not valid {name} (byte 0x{data[offset]:02x} at line {line}, column {column}){cookie}"


# -- reading and writing user files ----------------------------------------------------------

class SkippedFile(ValueError):
    """A file devicelint does not read (not a regular file, over max-file-size); the message
    is the DL902 text."""


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _too_large(size: str, max_size: int) -> SkippedFile:
    return SkippedFile(f"File is {size} bytes, over max-file-size ({max_size:,}); skipped")


def read_regular(path: str, max_size: Optional[int] = None) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed), reading at most
    `max_size` + 1 bytes. Anything else (FIFO, device, socket: `a.py -> /dev/zero`) is never
    opened for reading: a FIFO would block forever and a device never ends. Raises OSError
    (missing, permission, directory) or SkippedFile."""
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory", path)
    if not stat.S_ISREG(info.st_mode):
        raise SkippedFile(f"Not a regular file ({_kind(info.st_mode)}); not read")
    if max_size is not None and info.st_size > max_size:
        raise _too_large(f"{info.st_size:,}", max_size)
    # O_NONBLOCK: should the path have become a FIFO since the stat, open does not wait for
    # a writer; the fstat below then refuses it.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkippedFile(f"Not a regular file ({_kind(info.st_mode)}); not read")
        limit = max_size + 1 if max_size is not None else None
        chunks = []
        total = 0
        while limit is None or total < limit:
            chunk = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if max_size is not None and total > max_size:  # it grew after the stat
        raise _too_large(f"more than {max_size:,}", max_size)
    return b"".join(chunks)


class WriteRefused(ValueError):
    """A user file devicelint does not rewrite; the message says why."""


def check_rewritable(path: str) -> os.stat_result:
    """The stat of the file that writing `path` would replace (symlinks followed), or
    WriteRefused when devicelint must not rewrite it:

    - not a regular file;
    - read-only (the owner has no write permission), or this user may not write it: the
      user's intent is respected, not overridden by replacing the file;
    - more than one hard link: a replacement would split the links (the other names keep
      the old text), and writing in place would change every linked copy, including ones
      outside the project (package caches such as uv's and pnpm's hard-link files into
      environments; backups made with `cp -al` or rsnapshot are hard links) and would not
      be atomic. Either way silently changes something the user did not ask to change, so
      the file is reported and left alone."""
    target = os.path.realpath(path)
    info = os.stat(target)
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused(f"not a regular file ({_kind(info.st_mode)}); not rewritten")
    if not info.st_mode & stat.S_IWUSR:
        raise WriteRefused("the file is read-only; not rewritten")
    if not os.access(target, os.W_OK):
        raise WriteRefused("no permission to write the file; not rewritten")
    if info.st_nlink > 1:
        raise WriteRefused(
            f"the file has {info.st_nlink} hard links; rewriting it would split them or change "
            "every linked copy; not rewritten (copy it to break the link)"
        )
    return info


def _current(path: str, size: int) -> Optional[bytes]:
    try:
        return read_regular(path, size)
    except SkippedFile:
        return None


def replace_file(path: str, data: bytes, expected: Optional[bytes] = None) -> None:
    """Give the file at `path` (symlinks followed: the link stays a link) the content `data`,
    atomically: a temporary file in the same directory gets the whole content, the owner,
    group and mode of the original, and is synced to disk before it is renamed over the
    original. A full disk or a crash leaves the original untouched (at worst a stray
    `.NAME.*.devicelint-tmp` file). With `expected`, the file must still hold those bytes.
    Raises OSError, or WriteRefused (a ValueError; see check_rewritable)."""
    target = os.path.realpath(path)
    info = check_rewritable(target)
    if expected is not None and _current(target, len(expected)) != expected:
        raise WriteRefused("the file changed on disk while devicelint worked on it; left alone")
    directory = os.path.dirname(target) or "."
    import tempfile  # only a fix writes: linting does not import it

    fd, temporary = tempfile.mkstemp(
        prefix=f".{os.path.basename(target)}.", suffix=".devicelint-tmp", dir=directory
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            mine = os.fstat(handle.fileno())
            if hasattr(os, "fchown") and (mine.st_uid, mine.st_gid) != (info.st_uid, info.st_gid):
                try:
                    # As root: the file stays the user's. Otherwise only a group this user
                    # is in can be kept; a file of another user is not taken over.
                    os.fchown(handle.fileno(), info.st_uid, info.st_gid)
                except PermissionError:
                    raise WriteRefused(
                        f"the file belongs to uid {info.st_uid} gid {info.st_gid}; rewriting it "
                        "would change its owner; not rewritten"
                    ) from None
            if hasattr(os, "fchmod"):  # after fchown, which clears set-id bits
                os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            else:  # Windows before Python 3.13
                os.chmod(temporary, stat.S_IMODE(info.st_mode))
            os.fsync(handle.fileno())
        now = os.stat(target)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            raise WriteRefused("the file was replaced on disk while devicelint worked on it; left alone")
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError, AttributeError):  # make the rename durable (POSIX)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
