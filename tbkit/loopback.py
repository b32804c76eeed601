"""loopback_load.py — many short TCP connections over loopback, the load
under which traces/kernel-tcp-loopback.trace was recorded: each connection
connects, sends a small request, waits for the reply and closes, so the
kernel arms and cancels its retransmission, delayed-ACK, keepalive and
TIME_WAIT timers the way a busy request/response server does.

    python3 tools/loopback_load.py [--seconds 3] [--clients 8] [--think-ms 2]

A server process (one thread per connection) answers on 127.0.0.1 at an
ephemeral port; --clients threads each loop connect/request/reply/close
for --seconds, sleeping --think-ms between the request's two writes so
the server's delayed ACK timer has something to wait for.  It binds only
loopback and prints the number of connections made.
"""
import argparse
import os
import socket
import threading
import time


def serve(listener):
    def handle(conn):
        with conn:
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = conn.recv(4096)
                if not chunk:
                    return
                buf += chunk
            conn.sendall(b"ok " + str(len(buf)).encode() + b"\n")

    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def client(port, until, think, counter, lock):
    n = 0
    while time.monotonic() < until:
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"GET /x")
            if think:
                time.sleep(think)
            s.sendall(b" HTTP/1.0\n")
            while not s.recv(4096).endswith(b"\n"):
                pass
        n += 1
    with lock:
        counter[0] += n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--think-ms", type=float, default=2.0)
    a = ap.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    port = listener.getsockname()[1]
    pid = os.fork()
    if pid == 0:
        serve(listener)
        os._exit(0)
    listener.close()
    counter, lock = [0], threading.Lock()
    until = time.monotonic() + a.seconds
    threads = [threading.Thread(target=client,
                                args=(port, until, a.think_ms / 1000.0,
                                      counter, lock))
               for _ in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.kill(pid, 15)
    os.waitpid(pid, 0)
    print("loopback_load: %d connections in %.1f s from %d clients"
          % (counter[0], a.seconds, a.clients))
