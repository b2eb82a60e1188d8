"""Remote spilling over real TCP on localhost: the framed protocol, retries, and a clear StorageError (never wrong
data) when the host dies mid-transfer, stalls, corrupts a reply, or is not there."""

from __future__ import annotations

import socket
import struct
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from micronn.storage import Compressed, FileStorage, StorageError, open_storage
from micronn.storage.remote import (
    BAD_FRAME,
    FAILED,
    GET,
    HEADER,
    MAX_PAYLOAD,
    OK,
    PING,
    PUT,
    USB_FS,
    RemoteError,
    RemoteStorage,
    frame,
    read_frame,
    serve,
)

X = np.arange(10_000, dtype=np.uint32).view(np.uint8)[:30_000].copy()


def client(server, **kw) -> RemoteStorage:
    return RemoteStorage("127.0.0.1", server.port, **{"timeout_s": 2.0, "retries": 2, **kw})


def test_round_trip_and_modeled_link_time() -> None:
    with serve() as srv, client(srv, chunk=4096) as c:
        c.ping()
        c.put(7, X)
        out = np.zeros(10_000, np.uint8)
        c.get(7, 12_345, out)  # three GET frames of at most 4096 bytes
        assert (out == X[12_345:22_345]).all() and srv.requests == 2 + 3
        c.put(7, X[:5])  # replace
        c.drop(7)
        c.drop(7)
        with pytest.raises(StorageError, match="object 7 is not stored") as e:
            c.get(7, 0, out[:1])
        assert not isinstance(e.value, RemoteError)  # the host answered: no retry for a refusal
        n = srv.requests
        with pytest.raises(StorageError, match=r"outside its 5 bytes"):
            c.put(8, X[:5]) or c.get(8, 3, out[:3])
        assert srv.requests == n + 2
        assert c.stats.modeled_s == pytest.approx(USB_FS.write_s(30_000) + USB_FS.read_s(4096) * 2
                                                   + USB_FS.read_s(10_000 - 8192) + USB_FS.write_s(5)
                                                   + 2 * USB_FS.write_s(0) + USB_FS.write_s(5))


def test_server_backend_and_compression() -> None:
    with serve(backend=FileStorage(chunk=512)) as srv, Compressed(client(srv), chunk=1024) as c:
        x = np.zeros(20_000, np.uint8)
        x[::5] = 9
        c.put(1, x)
        out = np.zeros(3000, np.uint8)
        c.get(1, 7000, out)
        assert (out == x[7000:10000]).all() and c.stats.bytes_written == c.stats.stored_bytes < 20_000 // 2


def test_host_killed_mid_transfer() -> None:
    srv = serve(fault="die_mid_get")
    c = client(srv)
    c.put(1, X)
    out = np.zeros(X.size, np.uint8)
    with pytest.raises(RemoteError) as e:
        c.get(1, 0, out)
    msg = str(e.value)
    assert "GET of key 1 failed after 3 attempt(s)" in msg and "mid-transfer" in msg and "refused" in msg
    assert not out.any()  # half a frame never reaches the caller
    with pytest.raises(RemoteError, match="refused"):
        c.put(2, X)
    c.close()


def test_dead_host() -> None:
    srv = serve()
    c = client(srv, retries=1)
    c.put(1, X[:100])
    srv.close()  # the host goes away between two requests
    with pytest.raises(RemoteError, match=r"failed after 2 attempt\(s\): .*refused"):
        c.get(1, 0, np.zeros(100, np.uint8))
    with pytest.raises(RemoteError, match="refused"):
        RemoteStorage("127.0.0.1", srv.port, retries=0).ping()


@pytest.mark.parametrize("count", [1, None])
def test_corrupted_reply(count: int | None) -> None:
    """A flipped payload byte fails the CRC32: retried, and never returned."""
    with serve(fault="corrupt_get", fault_count=count) as srv, client(srv) as c:
        c.put(1, X)
        out = np.zeros(1000, np.uint8)
        if count == 1:
            c.get(1, 500, out)  # the retry gets a clean copy
            assert (out == X[500:1500]).all()
        else:
            with pytest.raises(RemoteError, match="corrupted frame: CRC32 mismatch"):
                c.get(1, 500, out)
            assert not out.any()


@pytest.mark.parametrize("count", [1, None])
def test_short_read(count: int | None) -> None:
    with serve(fault="cut_get", fault_count=count) as srv, client(srv, retries=1) as c:
        c.put(1, X)
        out = np.zeros(2000, np.uint8)
        if count == 1:
            c.get(1, 0, out)
            assert (out == X[:2000]).all()
        else:
            with pytest.raises(RemoteError, match=r"short read of the payload \(\d+ of 2000 bytes\).*short read"):
                c.get(1, 0, out)


def test_stalled_host_times_out() -> None:
    with serve(fault="stall") as srv, client(srv, timeout_s=0.1, retries=1) as c:
        with pytest.raises(RemoteError, match=r"PING of key 0 failed after 2 attempt\(s\): timed out after 0.1 s"):
            c.ping()
    with serve(fault="stall", fault_count=1) as srv, client(srv, timeout_s=0.2) as c:
        c.put(3, X[:10])  # the first try stalls, the retry on a new connection succeeds
        assert srv.requests == 2


def fake_host(reply: bytes | None) -> tuple[socket.socket, threading.Thread]:
    """A host that answers any request with ``reply`` (``None``: resets the connection)."""
    lst = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        conn, _ = lst.accept()
        with conn:
            read_frame(conn)
            if reply is None:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
            else:
                conn.sendall(reply)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return lst, t


@pytest.mark.parametrize("reply, msg", [
    (b"JUNK" + bytes(HEADER.size), "bad magic b'JUNK'"),
    (frame(GET, OK, 1, 4, 0, 8, b"12345678")[:-4] + b"\0\0\0\0", "CRC32 mismatch"),
    (frame(GET, OK, 1, 4, 0, 8, b"1234567"), r"bad payload length 7 \(expected 8\)"),
    (frame(GET, OK, 99, 4, 0, 8, b"12345678"), "reply to GET #99 key 4 for GET #1 key 4"),
    (frame(GET, OK, 1, 4, 0, 8, b"12345678")[:HEADER.size + 3], "short read of the payload"),
    (None, "connection reset by the host"),
])
def test_lying_host(reply: bytes, msg: str) -> None:
    lst, t = fake_host(reply)
    with lst, RemoteStorage("127.0.0.1", lst.getsockname()[1], timeout_s=1.0, retries=0) as c:
        out = np.zeros(8, np.uint8)
        with pytest.raises(RemoteError, match=msg):
            c.get(4, 0, out)
        assert not out.any()
    t.join(2)


def test_garbled_request_gets_bad_frame_and_host_survives() -> None:
    with serve() as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=2) as s:
            bad = frame(GET, OK, 1, 0, 0, 4)
            bad[-1] ^= 1
            s.sendall(bad)
            (_, _, _, status, *_), body = read_frame(s)
            assert status == BAD_FRAME and b"CRC32 mismatch" in body
        with client(srv) as c:
            c.put(1, b"still alive")
            out = bytearray(5)
            c.get(1, 6, memoryview(out))
            assert out == b"alive"


def test_open_storage_remote_owns_its_host() -> None:
    c = open_storage("remote", retries=0)
    c.put(0, b"abc")
    port = c.port
    c.close()
    with pytest.raises(RemoteError, match="refused"):
        RemoteStorage("127.0.0.1", port, retries=0).ping()
    with pytest.raises(StorageError, match="unknown fault"):
        serve(fault="meteor")
    with pytest.raises(StorageError, match="bad remote settings"):
        RemoteStorage("127.0.0.1", 1, timeout_s=0)


# -- hostile and broken peers: bounded time and memory, a clear error, the host stays up (issue 12) -------------


def _alive(srv) -> None:
    """The host still serves a well-behaved client."""
    with client(srv) as c:
        c.put(9, b"still here")
        out = bytearray(4)
        c.get(9, 6, memoryview(out))
        assert out == b"here"


def _closed_by_peer(s: socket.socket) -> bool:
    """True once the peer has hung up (reads drain what it sent first)."""
    try:
        for _ in range(1000):  # bounded: a reply is at most a few frames
            if not s.recv(1 << 16):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    return False


def test_garbage_bytes_get_bad_frame_and_hang_up() -> None:
    junk = np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes()
    with serve() as srv:
        for data in (junk, b"MNSP" + junk[:100], frame(GET, OK, 1, 0, 0, 4)[:4] + bytes([99]) + junk[:40]):
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
                s.sendall(data)
                (_, _, _, status, *_), body = read_frame(s)
                assert status == BAD_FRAME and b"corrupted frame" in body
                assert _closed_by_peer(s)  # the stream is out of step: the host drops it
        _alive(srv)


def test_truncated_frames_then_close() -> None:
    good = frame(PUT, OK, 1, 5, 0, 100, bytes(100))
    with serve() as srv:
        for cut in (1, HEADER.size - 1, HEADER.size, HEADER.size + 50, len(good) - 1):
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
                s.sendall(good[:cut])  # then the client goes away
        _alive(srv)
        with client(srv) as c:
            with pytest.raises(StorageError, match="object 5 is not stored"):  # no half frame was ever applied
                c.get(5, 0, np.zeros(1, np.uint8))


def test_oversized_length_fields_cost_no_memory() -> None:
    with serve(timeout_s=0.5) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:  # past the limit: refused at once
            s.sendall(frame(PUT, OK, 1, 0, 0, 0)[:HEADER.size - 4] + struct.pack("<I", MAX_PAYLOAD + 1))
            (_, _, _, status, *_), body = read_frame(s)
            assert status == BAD_FRAME and b"bad payload length" in body
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:  # a GET reply that is no frame
            s.sendall(frame(GET, OK, 1, 0, 0, 2**32 - 1))
            (_, _, _, status, *_), body = read_frame(s)
            assert status == FAILED and b"frame limit" in body
        tracemalloc.start()
        try:  # within the limit, but only 10 bytes follow: the host's buffer grows with what arrives, not the claim
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
                s.sendall(frame(PUT, OK, 1, 0, 0, MAX_PAYLOAD)[:HEADER.size - 4] + struct.pack("<I", MAX_PAYLOAD)
                          + bytes(10))
                assert _closed_by_peer(s)  # dropped when the frame does not arrive within the host's timeout
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < MAX_PAYLOAD // 8
        _alive(srv)


def test_stalled_client_blocks_no_one() -> None:
    with serve(timeout_s=30) as srv:  # the host would wait long for the staller: others must not wait with it
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as staller:
            staller.sendall(frame(PUT, OK, 1, 1, 0, 1000, bytes(1000))[:HEADER.size + 300])
            for _ in range(3):
                _alive(srv)  # each would time out (5 s) if the host were stuck on the staller


def test_trickling_client_is_dropped() -> None:
    """A client sending a byte at a time keeps every receive busy; the whole frame still has a deadline."""
    data = frame(PUT, OK, 1, 3, 0, 100, bytes(100))
    with serve(timeout_s=0.3) as srv, socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        sent = 0
        try:
            for b in data:  # bounded: 136 bytes at 20 per second take far longer than the host's 0.3 s
                s.send(bytes([b]))
                sent += 1
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert sent < len(data)  # the host hung up before the frame was complete
        _alive(srv)


def test_many_clients_at_once() -> None:
    with serve() as srv:
        def work(i: int) -> bool:
            with client(srv, timeout_s=10) as c:
                x = np.full(1000 + i, i, np.uint8)
                for _ in range(5):
                    c.put(100 + i, x)
                    out = np.zeros(x.size, np.uint8)
                    c.get(100 + i, 0, out)
                    if not (out == x).all():
                        return False
                return True

        with ThreadPoolExecutor(max_workers=16) as pool:
            assert all(pool.map(work, range(32), timeout=120))
        assert srv.requests == 32 * 10


def test_busy_host_says_so() -> None:
    with serve(max_clients=2) as srv:
        holders = [client(srv) for _ in range(2)]
        for h in holders:
            h.ping()  # each holds a connection, and so a slot
        with pytest.raises(RemoteError, match=r"failed after 2 attempt\(s\): host busy: 2 clients"):
            client(srv, retries=1).ping()
        holders.pop().close()
        for _ in range(100):  # bounded: the host frees the slot as soon as it sees the hang-up
            try:
                client(srv, retries=0).ping()
                break
            except RemoteError:
                time.sleep(0.02)
        else:
            pytest.fail("the host never freed the slot")
        holders[0].close()
    with pytest.raises(StorageError, match="bad server settings"):
        serve(max_clients=0)


def _host(behave) -> tuple[socket.socket, threading.Thread]:
    """A host that accepts one connection and runs ``behave(conn)`` on it."""
    lst = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        conn, _ = lst.accept()
        with conn:
            conn.settimeout(5)
            try:
                behave(conn)
            except OSError:
                pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return lst, t


def test_host_dies_mid_request() -> None:
    def die(conn: socket.socket) -> None:  # reads the start of a large PUT, then the machine is gone
        conn.recv(1000)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    lst, t = _host(die)
    with lst, RemoteStorage("127.0.0.1", lst.getsockname()[1], timeout_s=2.0, retries=0) as c:
        with pytest.raises(RemoteError, match="PUT of key 1 failed after 1 attempt"):
            c.put(1, np.zeros(8 << 20, np.uint8))
    t.join(5)


def test_trickling_host_times_out() -> None:
    """A host answering a byte at a time cannot hold the client past its timeout, however busy each read is."""
    def trickle(conn: socket.socket) -> None:
        read_frame(conn)
        for b in frame(PING, OK, 1, 0, 0, 0):
            conn.send(bytes([b]))
            time.sleep(0.05)

    lst, t = _host(trickle)
    with lst, RemoteStorage("127.0.0.1", lst.getsockname()[1], timeout_s=0.3, retries=0) as c:
        with pytest.raises(RemoteError, match="too slowly|timed out"):
            c.ping()
    t.join(5)


def test_lying_length_costs_the_client_no_memory() -> None:
    def lie(conn: socket.socket) -> None:  # a PING reply announcing a 64 MiB payload, then silence
        read_frame(conn)
        conn.sendall(frame(PING, OK, 1, 0, 0, 0)[:HEADER.size - 4] + struct.pack("<I", MAX_PAYLOAD) + bytes(10))
        conn.recv(1)  # until the client hangs up

    lst, t = _host(lie)
    tracemalloc.start()
    try:
        with lst, RemoteStorage("127.0.0.1", lst.getsockname()[1], timeout_s=0.3, retries=0) as c:
            with pytest.raises(RemoteError, match="too slowly|timed out"):
                c.ping()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MAX_PAYLOAD // 8
    t.join(5)


def test_client_misuse_is_a_storage_error() -> None:
    with serve() as srv:
        c = client(srv)
        c.put(1, b"abc")
        for call in (lambda: c.get(1, 2**64, np.zeros(1, np.uint8)), lambda: c.get(1, 2**63, np.zeros(1, np.uint8)),
                     lambda: c.put(-1, b"x"), lambda: c.put(2**32, b"x"), lambda: c.put(2, "text"),
                     lambda: c.get(1, 0, b"abc"), lambda: c.get(1, -1, np.zeros(1, np.uint8))):
            with pytest.raises(StorageError):
                call()
        c.close()
        with pytest.raises(StorageError, match="is closed"):
            c.ping()
