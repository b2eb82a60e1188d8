"""Remote spilling (TinySeg §6.2.2): spilled tensors live on a host reached over a real TCP byte stream.

Every message, request or reply, is one frame:

    header  <4s B B B B I I Q I I>  magic b"MNSP", version, opcode, status, flags (0), sequence number,
                                     key, offset, length (object size for PUT, range length for GET), payload length
    payload                          PUT: the object; GET reply: the range; an error reply: its message (UTF-8)
    crc32   <I>                      CRC32 of header + payload

A reply echoes the request's opcode, sequence number and key, so a stale or misrouted reply is caught; a GET reply
must carry exactly the bytes asked for. Data whose frame fails a check is never handed to the caller. Every socket
operation has a timeout; all four operations are idempotent (PUT replaces, DROP of an absent key is a no-op), so the
client retries a bounded number of times on a fresh connection, then raises ``StorageError`` saying what happened
on each attempt: refused or reset connection, timeout, corrupted frame, short read, busy host.

Hostile or broken peers cost bounded time and memory on either side: a receive buffer grows only with the bytes
that actually arrive (never to what a length field claims), a whole frame must arrive within the reader's timeout
from its first byte (a peer trickling bytes cannot hold a reader), the host serves each client in its own thread (a
stalled client delays no other) and at most ``max_clients`` at once (the rest get a BUSY reply), and a GET asks for
at most ``MAX_PAYLOAD`` bytes.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
import zlib
from typing import Any

import numpy as np

from micronn.storage.base import MemoryStorage, Storage, StorageError, Timing

MAGIC, VERSION = b"MNSP", 1
PUT, GET, DROP, PING = 1, 2, 3, 4
OPS = {PUT: "PUT", GET: "GET", DROP: "DROP", PING: "PING"}
OK, FAILED, BAD_FRAME, BUSY = 0, 1, 2, 3  # reply status: done; refused by the host's storage (not retried); garbled
# request; too many clients (sent unasked on connecting, then the host hangs up)
HEADER, CRC = struct.Struct("<4sBBBBIIQII"), struct.Struct("<I")
MAX_PAYLOAD = 64 << 20  # a header announcing more is corrupt: never allocate what a flipped bit asks for
GROW = 1 << 20  # receive buffers grow by at most this much ahead of the bytes that arrived
FAULTS = ("die_mid_get", "cut_get", "corrupt_get", "stall")


class RemoteError(StorageError):
    """Talking to the storage host failed (dead host, timeout, corrupted or short frame)."""


def frame(op: int, status: int, seq: int, key: int, offset: int, length: int, payload: bytes | memoryview = b"",
          ) -> bytearray:
    out = bytearray(HEADER.pack(MAGIC, VERSION, op, status, 0, seq, key, offset, length, len(payload)))
    out += memoryview(payload).cast("B")
    out += CRC.pack(zlib.crc32(out))
    return out


def _recv_exact(sock: socket.socket, n: int, what: str, deadline: float | None = None, before: int = 0) -> bytearray:
    """Exactly ``n`` bytes, or RemoteError (peer closed) or TimeoutError (each receive has the socket's timeout;
    ``deadline``, a ``time.monotonic()`` instant, bounds them all). ``before`` bytes of ``what`` came earlier."""
    buf, got = bytearray(min(n, GROW)), 0
    timeout = sock.gettimeout()
    try:
        while got < n:
            if got == len(buf):
                buf.extend(bytes(min(n - got, GROW)))
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the peer sent {before + got} of {before + n} bytes of the {what} too slowly")
                sock.settimeout(left if timeout is None else min(timeout, left))
            k = sock.recv_into(memoryview(buf)[got:])
            if k == 0:
                raise RemoteError("connection closed by the peer before a frame"
                                  if what == "frame header" and not got + before else
                                  f"connection closed mid-transfer: short read of the {what} "
                                  f"({before + got} of {before + n} bytes)")
            got += k
    finally:
        if deadline is not None:
            sock.settimeout(timeout)
    return buf


def read_frame(sock: socket.socket, expect_payload: int | None = None, timeout_s: float | None = None,
               ) -> tuple[tuple, bytearray]:
    """One frame's header fields and payload, checked: magic, version, payload length bound, CRC32.

    The first byte may take the socket's timeout (an idle connection); with ``timeout_s`` the rest of the frame
    must follow within that many seconds."""
    first = _recv_exact(sock, 1, "frame header")
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    hdr = first + _recv_exact(sock, HEADER.size - 1, "frame header", deadline, 1)
    fields = HEADER.unpack(hdr)
    magic, version, plen = fields[0], fields[1], fields[9]
    if magic != MAGIC:
        raise RemoteError(f"corrupted frame: bad magic {bytes(magic)!r}")
    if version != VERSION:
        raise RemoteError(f"corrupted frame: protocol version {version}, expected {VERSION}")
    if plen > MAX_PAYLOAD or (expect_payload is not None and fields[3] == OK and plen != expect_payload):
        raise RemoteError(f"corrupted frame: bad payload length {plen}"
                          + (f" (expected {expect_payload})" if expect_payload is not None else ""))
    payload = _recv_exact(sock, plen, "payload", deadline)
    (crc,) = CRC.unpack(_recv_exact(sock, CRC.size, "checksum", deadline))
    if zlib.crc32(payload, zlib.crc32(hdr)) != crc:
        raise RemoteError("corrupted frame: CRC32 mismatch")
    return fields, payload


class StorageServer:
    """The host side: a TCP server in a thread, keeping objects in ``backend`` (a ``MemoryStorage`` by default).

    ``fault`` makes it misbehave on purpose, for tests, ``fault_count`` times (``None``: always): ``"die_mid_get"``
    sends half a GET reply and then the whole host dies (listener and connections closed); ``"cut_get"`` drops just
    that connection half way; ``"corrupt_get"`` flips a payload byte after the CRC is computed; ``"stall"`` never
    answers (until closed).

    ``timeout_s`` bounds how long a connection may sit idle and how long one request frame may take to arrive;
    ``max_clients`` bounds the connections served at once (one thread each)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, backend: Storage | None = None,
                 fault: str | None = None, fault_count: int | None = None, timeout_s: float = 30.0,
                 max_clients: int = 64):
        if fault is not None and fault not in FAULTS:
            raise StorageError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        if not timeout_s > 0 or max_clients < 1:
            raise StorageError(f"bad server settings: timeout_s {timeout_s}, max_clients {max_clients}")
        self.backend = backend or MemoryStorage()
        self.fault, self.fault_count, self.timeout_s, self.max_clients = fault, fault_count, timeout_s, max_clients
        try:
            self._listener = socket.create_server((host, port))
        except OSError as e:
            raise StorageError(f"cannot listen on {host}:{port}: {e}") from e
        self._listener.settimeout(0.05)  # the accept loop polls for close()
        self.host, self.port = self._listener.getsockname()[:2]
        self.requests = 0
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True, name=f"storage-server-{self.port}")
        self._thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            with self._lock:
                if self._closed.is_set():
                    conn.close()
                    break
                busy = len(self._conns) >= self.max_clients
                if not busy:
                    self._conns.add(conn)
            if busy:  # say so (the client retries later) without a thread; never wait on this client
                try:
                    conn.setblocking(False)
                    conn.send(frame(0, BUSY, 0, 0, 0, 0, f"host busy: {self.max_clients} clients".encode()))
                except OSError:
                    pass
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _faulty(self, op: int) -> str | None:
        """The fault to inject into this request, if any (and count it)."""
        if self.fault is None or (self.fault != "stall" and op != GET):
            return None
        with self._lock:
            if self.fault_count is not None:
                if self.fault_count <= 0:
                    return None
                self.fault_count -= 1
        return self.fault

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(self.timeout_s)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while not self._closed.is_set():
                try:
                    (_, _, op, _, _, seq, key, offset, length, _), payload = read_frame(conn, timeout_s=self.timeout_s)
                except RemoteError as e:
                    if "closed by the peer" not in str(e):  # garbled: say so, drop the now unsynchronised stream
                        conn.sendall(frame(0, BAD_FRAME, 0, 0, 0, 0, str(e).encode()))
                    return
                with self._lock:
                    self.requests += 1
                fault = self._faulty(op)
                if fault == "stall":
                    self._closed.wait()
                    return
                status, body = OK, b""
                try:
                    with self._lock:
                        if op == PUT:
                            if len(payload) != length:
                                raise StorageError(f"PUT announces {length} bytes but carries {len(payload)}")
                            self.backend.put(key, payload)
                        elif op == GET:
                            if length > MAX_PAYLOAD:  # a reply that large is not a frame: never allocate it
                                raise StorageError(f"GET of {length} bytes, over the {MAX_PAYLOAD}-byte frame limit")
                            body = np.empty(length, np.uint8)
                            self.backend.get(key, offset, body)
                        elif op == DROP:
                            self.backend.drop(key)
                        elif op != PING:
                            raise StorageError(f"unknown opcode {op}")
                except Exception as e:  # the host stays up and says why
                    status, body = FAILED, f"{type(e).__name__}: {e}".encode()
                reply = frame(op, status, seq, key, offset, length, body)
                if fault == "corrupt_get":
                    reply[HEADER.size + len(body) // 2] ^= 0x5A
                if fault in ("die_mid_get", "cut_get"):
                    conn.sendall(reply[:HEADER.size + len(body) // 2])
                    if fault == "die_mid_get":
                        self.close()
                    return
                conn.sendall(reply)
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    def close(self) -> None:
        """Stop listening and cut every connection, as a host that dies would."""
        self._closed.set()
        with self._lock:
            for c in [self._listener, *self._conns]:  # shutdown wakes the accept loop and refuses new connections
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._listener.close()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)

    def __enter__(self) -> StorageServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def serve(host: str = "127.0.0.1", port: int = 0, **kw: Any) -> StorageServer:
    """Start a storage host in a background thread; ``.port`` is where it listens, ``.close()`` stops it."""
    return StorageServer(host, port, **kw)


# A USB full-speed CDC link (the paper's board talks to its host over USB): ~1 MB/s of payload and a 1 ms frame per
# request. An assumption for the latency model, not a measurement; pass timing= to model another link.
USB_FS = Timing(read_setup_s=1e-3, read_bps=1e6, write_setup_s=1e-3, write_bps=1e6)


class RemoteStorage(Storage):
    """The client: one persistent TCP connection, re-opened on failure. GETs are split into requests of at most
    ``chunk`` bytes so neither side buffers more than that. ``stats.modeled_s`` prices the traffic with ``timing``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, timeout_s: float = 5.0, retries: int = 2,
                 timing: Timing | None = None, chunk: int = 1 << 20, server: StorageServer | None = None):
        super().__init__(timing or USB_FS)
        if timeout_s <= 0 or retries < 0 or not 0 < chunk <= MAX_PAYLOAD:
            raise StorageError(f"bad remote settings: timeout_s {timeout_s}, retries {retries}, chunk {chunk}")
        self.host, self.port, self.timeout_s, self.retries, self.chunk = host, port, timeout_s, retries, chunk
        self.server = server  # a host this client started and closes with itself
        self._sock: socket.socket | None = None
        self._seq = 0

    @classmethod
    def local(cls, **kw: Any) -> RemoteStorage:
        """A client of a fresh host on localhost, which it owns (closing the client stops the host)."""
        server = serve(**{k: kw.pop(k) for k in ("backend", "fault", "fault_count") if k in kw})
        return cls("127.0.0.1", server.port, server=server, **kw)

    def _disconnect(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _connect(self) -> socket.socket:
        try:
            s = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except ConnectionRefusedError as e:
            raise RemoteError("connection refused (host down?)") from e
        except TimeoutError as e:
            raise RemoteError(f"connect timed out after {self.timeout_s} s") from e
        except OSError as e:
            raise RemoteError(f"cannot connect: {e}") from e
        s.settimeout(self.timeout_s)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def _call(self, op: int, key: int, offset: int = 0, length: int = 0, payload: bytes | memoryview = b"",
              ) -> bytearray:
        """One request and its checked reply, retried on a fresh connection when the exchange fails."""
        if len(payload) > MAX_PAYLOAD:
            raise StorageError(f"object {key} is {len(payload)} bytes, over the {MAX_PAYLOAD}-byte frame limit")
        failures = []
        for attempt in range(self.retries + 1):
            try:
                if self._sock is None:
                    self._sock = self._connect()
                self._seq = (self._seq + 1) % 2**32
                self._sock.sendall(frame(op, OK, self._seq, key, offset, length, payload))
                (_, _, rop, status, _, seq, rkey, _, _, _), body = read_frame(
                    self._sock, length if op == GET else None, self.timeout_s)
                if status == BAD_FRAME:
                    raise RemoteError(f"the host received a corrupted request ({body.decode(errors='replace')})")
                if status == BUSY:
                    raise RemoteError(body.decode(errors="replace"))
                if (rop, seq, rkey) != (op, self._seq, key):
                    raise RemoteError(f"corrupted frame: reply to {OPS.get(rop, rop)} #{seq} key {rkey} for "
                                      f"{OPS[op]} #{self._seq} key {key}")
                if status != OK:
                    raise StorageError(f"remote storage {self.host}:{self.port}: {OPS[op]} of key {key} refused: "
                                       f"{body.decode(errors='replace')}")
                return body
            except RemoteError as e:
                failures.append(str(e))
            except TimeoutError:
                failures.append(f"timed out after {self.timeout_s} s waiting for the host")
            except (ConnectionResetError, BrokenPipeError):
                failures.append("connection reset by the host")
            except OSError as e:
                failures.append(f"socket error: {e}")
            self._disconnect()
            if attempt < self.retries:
                time.sleep(0.01 * (attempt + 1))
        raise RemoteError(f"remote storage {self.host}:{self.port}: {OPS[op]} of key {key} failed after "
                          f"{len(failures)} attempt(s): " + "; ".join(failures))

    def ping(self) -> None:
        self._live()
        self._call(PING, 0)

    def _put(self, key: int, data: memoryview) -> float:
        self._call(PUT, key, 0, data.nbytes, data)
        return self.timing.write_s(data.nbytes)

    def _get(self, key: int, offset: int, out: np.ndarray) -> float:
        if offset + out.size >= 2**64:  # the frame's offset field is 64 bits; no object is that large anyway
            raise StorageError(f"read of bytes [{offset}, {offset + out.size}) of object {key} is beyond any object")
        t = 0.0
        for pos in range(0, out.size, self.chunk) if out.size else [0]:
            n = min(self.chunk, out.size - pos)
            out[pos:pos + n] = np.frombuffer(self._call(GET, key, offset + pos, n), np.uint8)
            t += self.timing.read_s(n)
        return t

    def _drop(self, key: int) -> float:
        self._call(DROP, key)
        return self.timing.write_s(0)

    def close(self) -> None:
        self._disconnect()
        if self.server is not None:
            self.server.close()
        super().close()
