"""A forward proxy that tunnels CONNECT requests, as a corporate proxy does, for the CLI's proxy test.
Usage: connect_proxy.py LOG; prints its port on stdout and appends "CONNECT host:port" to LOG per tunnel,
then "> " and the first request line that goes through it when that is plain HTTP."""
import socket
import sys
import threading

LOG = sys.argv[1]


def pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = client.recv(65536)
        if not chunk:
            client.close()
            return
        head += chunk
    line = head.split(b"\r\n")[0].decode()
    method, target, _ = line.split(" ", 2)
    if method != "CONNECT":
        client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        client.close()
        return
    with open(LOG, "a") as log:
        log.write(f"CONNECT {target}\n")
    host, port = target.rsplit(":", 1)
    upstream = socket.create_connection((host, int(port)))
    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
    first = client.recv(65536)
    if first:
        # A plain-HTTP tunnel shows its first request line: which calls came through.
        line = first.split(b"\r\n")[0]
        if line[:1].isalpha():
            with open(LOG, "a") as log:
                log.write(f"> {line.decode(errors='replace')}\n")
        upstream.sendall(first)
    pipe(client, upstream)


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=serve, args=(connection,), daemon=True).start()
