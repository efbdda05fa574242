"""A small Language Server Protocol client for tests and bench/lsp_latency.py: spawns a
server, speaks JSON-RPC over its stdin/stdout with `Content-Length` framing, and bounds every
wait with a timeout. Deliberately independent of pygls: it checks the server as an editor
sees it, bytes on a pipe."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any, Callable, Optional


# What an editor like VS Code declares, in the parts the tests rely on.
CAPABILITIES = {
    "workspace": {"workspaceEdit": {"documentChanges": True}},
    "textDocument": {"publishDiagnostics": {"versionSupport": True},
                     "hover": {"contentFormat": ["markdown", "plaintext"]},
                     "codeAction": {"codeActionLiteralSupport": {
                         "codeActionKind": {"valueSet": ["quickfix"]}}}},
    "notebookDocument": {"synchronization": {}},
}


class LspError(AssertionError):
    pass


class LspClient:
    def __init__(self, command: list[str], cwd: str, env: Optional[dict] = None, stderr=None) -> None:
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
        )
        self._messages: "queue.Queue[tuple[float, Optional[dict]]]" = queue.Queue()
        self.backlog: list[tuple[float, dict]] = []  # received, not yet consumed
        self.server_requests: list[dict] = []  # requests from the server (answered with null)
        self._next_id = 0
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- wire --

    def _read_loop(self) -> None:
        stream = self.process.stdout
        try:
            while True:
                length = None
                while True:
                    line = stream.readline()
                    if not line:
                        self._messages.put((time.perf_counter(), None))
                        return
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.decode("ascii").partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                if length is None:
                    raise LspError("a message without Content-Length")
                body = stream.read(length)
                self._messages.put((time.perf_counter(), json.loads(body.decode("utf-8"))))
        except (OSError, ValueError):
            self._messages.put((time.perf_counter(), None))

    def send(self, message: dict) -> float:
        body = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False).encode("utf-8")
        sent = time.perf_counter()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return sent

    def notify(self, method: str, params: Any = None) -> float:
        message = {"method": method}
        if params is not None:
            message["params"] = params
        return self.send(message)

    def request(self, method: str, params: Any = None, timeout: float = 30) -> Any:
        self._next_id += 1
        ident = self._next_id
        message = {"id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.wait_for(lambda m: m.get("id") == ident and "method" not in m, timeout,
                              f"the reply to {method}")
        if "error" in reply:
            raise LspError(f"{method} failed: {reply['error']}")
        return reply.get("result")

    # -- waiting --

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float, what: str = "a message"
                 ) -> dict:
        return self.wait_for_timed(predicate, timeout, what)[1]

    def wait_for_timed(self, predicate: Callable[[dict], bool], timeout: float,
                       what: str = "a message") -> tuple[float, dict]:
        """The first message (received time, message) matching `predicate`, from the
        backlog or the wire; raises LspError after `timeout` seconds."""
        for index, (received, message) in enumerate(self.backlog):
            if predicate(message):
                del self.backlog[index]
                return received, message
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LspError(f"timed out after {timeout} s waiting for {what}")
            try:
                received, message = self._messages.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                raise LspError(f"the server closed its output while waiting for {what}")
            if "method" in message and "id" in message:  # a request from the server
                self.server_requests.append(message)
                self.send({"id": message["id"], "result": None})
                continue
            if predicate(message):
                return received, message
            self.backlog.append((received, message))

    def diagnostics(self, uri: str, version: Optional[int] = None, timeout: float = 30) -> list[dict]:
        """The next publishDiagnostics for `uri` (for `version`, when given)."""
        return self.diagnostics_timed(uri, version, timeout)[1]

    def diagnostics_timed(self, uri: str, version: Optional[int] = None, timeout: float = 30
                          ) -> tuple[float, list[dict]]:
        def match(message: dict) -> bool:
            if message.get("method") != "textDocument/publishDiagnostics":
                return False
            params = message["params"]
            return params["uri"] == uri and (version is None or params.get("version") == version)

        received, message = self.wait_for_timed(match, timeout, f"diagnostics of {uri} (version {version})")
        return received, message["params"]["diagnostics"]

    def published(self, uri: str) -> list[dict]:
        """publishDiagnostics for `uri` received so far and not consumed."""
        return [m["params"] for _, m in self.backlog
                if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]

    def drain(self, seconds: float) -> None:
        """Collect whatever arrives within `seconds` into the backlog."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                received, message = self._messages.get(timeout=left)
            except queue.Empty:
                return
            if message is None:
                return
            self.backlog.append((received, message))

    # -- lifecycle --

    def initialize(self, root_uri: str, capabilities: Optional[dict] = None, timeout: float = 60) -> dict:
        result = self.request("initialize", {
            "processId": None,
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "workspace"}],
            "capabilities": {**CAPABILITIES, **(capabilities or {})},
        }, timeout=timeout)
        self.notify("initialized", {})
        return result

    def stop(self, timeout: float = 30) -> int:
        """shutdown, exit; the server's exit code."""
        self.request("shutdown", timeout=timeout)
        self.notify("exit")
        return self.wait_exit(timeout)

    def wait_exit(self, timeout: float = 30) -> int:
        try:
            return self.process.wait(timeout=timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
