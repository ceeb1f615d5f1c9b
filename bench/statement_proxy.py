"""A TCP proxy that counts the commands a MySQL/MariaDB client sends.

MariaDB's status counters are server-wide (other databases share the
server) and performance_schema is off here, so a benchmark that wants the
statements of one program points that program at this proxy (``MYSQL_PORT``
for the test project) and reads the counts. Every command a client sends
is one packet with sequence number 0 (``COM_QUERY``, ``COM_PING``,
``COM_STMT_EXECUTE``...); the handshake's packets have other numbers.
``COM_QUERY`` packets are counted by their first SQL word as well.
"""

from __future__ import annotations

import socket
import threading
from collections import Counter

COMMANDS = {0x01: "QUIT", 0x02: "INIT_DB", 0x03: "QUERY", 0x0E: "PING", 0x17: "STMT_EXECUTE"}


class StatementProxy:
    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()

    def counts(self) -> Counter[str]:
        """Commands so far, by kind (``QUERY SELECT``, ``PING``...)."""
        with self._lock:
            return Counter(self._counts)

    def _accept(self) -> None:
        while True:
            client, _ = self._listener.accept()
            server = socket.create_connection(self._target)
            threading.Thread(target=self._from_client, args=(client, server), daemon=True).start()
            threading.Thread(target=_pipe, args=(server, client), daemon=True).start()

    def _from_client(self, client: socket.socket, server: socket.socket) -> None:
        buffer = b""
        while data := _receive(client):
            server.sendall(data)
            buffer += data
            while len(buffer) >= 4:
                length = int.from_bytes(buffer[:3], "little")
                if len(buffer) < 4 + length:
                    break
                if buffer[3] == 0 and length:
                    self._count(buffer[4 : 4 + length])
                buffer = buffer[4 + length :]
        _close(client, server)

    def _count(self, payload: bytes) -> None:
        kind = COMMANDS.get(payload[0], f"0x{payload[0]:02x}")
        if payload[0] == 0x03:
            words = payload[1:40].split()
            kind += " " + (words[0].decode("ascii", "replace").upper() if words else "")
        with self._lock:
            self._counts[kind] += 1


def _receive(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _pipe(source: socket.socket, target: socket.socket) -> None:
    while data := _receive(source):
        try:
            target.sendall(data)
        except OSError:
            break
    _close(source, target)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
