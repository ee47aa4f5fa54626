"""One end of a timed TCP exchange (stdlib only; run inside a host's namespace by
``benchmarks/exchange_netns.py``).

    python exchange_peer.py server|client ADDR PORT BYTES REPEATS START PERIOD exchange|oneway

Run ``k`` starts at wall-clock ``START + k x PERIOD`` (the namespaces share one clock): in
``exchange`` both ends send BYTES and receive BYTES on one connection at once (a sender thread),
in ``oneway`` the client sends and the server receives.  Prints ``{"seconds": [...]}``: from the
run's start to the end of this side's transfers (a side with nothing to do prints 0).
"""

import json
import socket
import sys
import threading
import time

CHUNK = 1 << 16


def send_all(sock, n):
    view = memoryview(bytes(CHUNK))
    while n > 0:
        n -= sock.send(view[:min(n, CHUNK)])


def recv_all(sock, n):
    buf = bytearray(1 << 20)
    while n > 0:
        got = sock.recv_into(buf, min(n, len(buf)))
        if not got:
            raise EOFError("peer closed the connection")
        n -= got


def main():
    role, addr, port, n, repeats, start, period, mode = sys.argv[1:9]
    port, n, repeats, start, period = int(port), int(n), int(repeats), float(start), float(period)
    if role == "server":
        with socket.socket() as ls:
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((addr, port))
            ls.listen(1)
            ls.settimeout(30)
            sock = ls.accept()[0]
    else:
        deadline = time.time() + 30
        while True:
            try:
                sock = socket.create_connection((addr, port), timeout=5)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sends = mode == "exchange" or role == "client"
    recvs = mode == "exchange" or role == "server"
    out = []
    for k in range(repeats):
        t0 = start + k * period
        time.sleep(max(0.0, t0 - time.time()))
        sender = threading.Thread(target=send_all, args=(sock, n)) if sends else None
        if sender:
            sender.start()
        if recvs:
            recv_all(sock, n)
        if sender:
            sender.join()
        out.append(time.time() - t0 if (sends or recvs) else 0.0)
    sock.close()
    print(json.dumps({"seconds": out}))


if __name__ == "__main__":
    main()
