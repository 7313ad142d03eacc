"""A server that is not a Countersign server, for the CLI's deadline and size tests (issue 19.11, 19.12).
Usage: broken_server.py MODE; prints its port on stdout, then serves until killed.

Modes:
  silent     accepts connections, reads whatever comes and never answers (nor closes)
  endless    answers every request 200 with a JSON-looking body that never ends (no length, no close)
  drip       answers 200 with its headers, then one body byte a second, forever
"""
import socket
import sys
import threading
import time

MODE = sys.argv[1]


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data


def serve(conn):
    try:
        if MODE == "silent":
            while conn.recv(65536):
                pass
            return
        if read_head(conn) is None:
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
        if MODE == "endless":
            chunk = b'{"padding": "' + b"x" * 65536
            while True:
                conn.sendall(chunk)
        elif MODE == "drip":
            conn.sendall(b"{")
            while True:
                time.sleep(1)
                conn.sendall(b" ")
    except OSError:
        pass
    finally:
        conn.close()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
