"""Remote spilling over real TCP on localhost: the framed protocol, retries, and a clear StorageError (never wrong
data) when the host dies mid-transfer, stalls, corrupts a reply, or is not there."""

from __future__ import annotations

import socket
import struct
import threading

import numpy as np
import pytest

from micronn.storage import Compressed, FileStorage, StorageError, open_storage
from micronn.storage.remote import (
    BAD_FRAME,
    GET,
    HEADER,
    OK,
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
