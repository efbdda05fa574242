"""Result cache: one file per (devicelint version, enabled rules, settings), mapping each
file's content hash to its findings. Unchanged files cost a read and a hash."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Optional

CACHE_DIR_NAME = ".devicelint_cache"


def content_key(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class Cache:
    def __init__(self, directory: Path, fingerprint: str) -> None:
        self.directory = directory
        self.file = directory / f"results-{fingerprint}.pickle"
        self.entries: dict[str, list[dict]] = {}
        self.used: set[str] = set()
        self.dirty = False
        try:
            with open(self.file, "rb") as handle:
                loaded = pickle.load(handle)
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ValueError, ImportError):
            self.entries = {}

    def get(self, key: str) -> Optional[list[dict]]:
        found = self.entries.get(key)
        if found is not None:
            self.used.add(key)
        return found

    def put(self, key: str, findings: list[dict]) -> None:
        self.entries[key] = findings
        self.used.add(key)
        self.dirty = True

    def save(self) -> None:
        """Write atomically, keeping only entries of files seen in this run (the cache
        does not grow without bound as files change)."""
        if not self.dirty and len(self.used) == len(self.entries):
            return
        kept = {k: v for k, v in self.entries.items() if k in self.used}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Created by devicelint\n*\n")
                (self.directory / "CACHEDIR.TAG").write_text(
                    "Signature: 8a477f597d28d172789f06886806bc55\n# devicelint cache\n"
                )
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(kept, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.file)
        except OSError:
            pass  # a read-only checkout still lints; it just is not cached
