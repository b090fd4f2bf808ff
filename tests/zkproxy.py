#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""zkproxy.py: a TCP proxy between ZooKeeper clients and one server, for
fault tests. It reads the client-to-server framing (4-byte length, then for
every request after the connect handshake an int32 xid and an int32 op type)
so it can cut a connection at an awkward moment:

  zkproxy.py LISTEN_PORT SERVER_HOST:PORT STATE_DIR [SEED]

LISTEN_PORT 0 picks a free port, written to STATE_DIR/port.

Control, by creating a file in STATE_DIR (the proxy removes it when done):
  cut-after-create   forward the next create of a node (not a container's;
                     alone, or in a transaction with the setData that
                     writes its data), then close the client's connection before the reply
                     can reach it; if the file says "stall", create
                     STATE_DIR/stall at the cut
  cut-after-delete   the same for the next delete request, alone or in a
                     transaction (a release that takes its parent along)
  cut-after-multi    the same for the next transaction (a multi-lock's)
  cut-now            close every proxied connection at once
  hold-multi         forward the next transaction (a multi), but hold the
                     server's reply to it, and everything the server sends
                     after it, until the client sends another request on
                     that connection: ZOOKEEPER-4537's missed wakeup (3.8.0)
                     as the client sees it, a commit applied only when the
                     next request of the session arrives
  delay              (kept while present) "MEAN_MS JITTER_MS STALL_PERMILLE
                     STALL_MS": hold every chunk, in both directions, MEAN_MS
                     +- JITTER_MS, and STALL_PERMILLE of them STALL_MS more, as
                     a lost segment waiting for its retransmission would be.
                     The slow link of the fault suite: this kernel may lack
                     tc netem, and the proxy works everywhere.
  stall              (kept while present) connections made from now on
                     forward nothing either way: a client cut off can
                     reconnect only once the file is gone
  zombie             (kept while present) forward nothing either way and
                     answer the clients' pings itself, so that a client
                     believes its session alive while the server expires it;
                     a server's close reaches the client only once the file
                     is gone. A process stopped past its session timeout
                     wakes up in just this state.
The proxy appends one line per event to STATE_DIR/events and writes its
PID to STATE_DIR/pid. It stops on SIGTERM.
"""
import os
import random
import signal
import socket
import struct
import sys
import threading

OP_CREATE, OP_DELETE, OP_MULTI, OP_CREATE2 = 1, 2, 14, 15
OP_PING, PING_XID = 11, -2
# reply header: xid, zxid (0: the client keeps its last zxid), err
PING_REPLY = struct.pack(">iiqi", 16, PING_XID, 0, 0)
# cut-after-create aims at a node's create: the container create of its
# parent, which goes first in the same round trip on a lock object's first
# use, is forwarded like any other request
CREATE_OPS = (OP_CREATE, OP_CREATE2)

listen_port = int(sys.argv[1])
server_host, server_port = sys.argv[2].rsplit(":", 1)
state = sys.argv[3]
lock = threading.Lock()
conns = []
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 0)
delay = None  # (mean, jitter, stall_permille, stall) in ms, or None


def slow_down():
    d = delay
    if d is None:
        return
    with lock:
        ms = d[0] + rng.uniform(-d[1], d[1])
        if rng.randrange(1000) < d[2]:
            ms += d[3]
    if ms > 0:
        threading.Event().wait(ms / 1000.0)


def event(msg):
    with lock:
        with open(os.path.join(state, "events"), "a") as f:
            f.write(msg + "\n")


def take(flag):
    """The content of STATE_DIR/flag, once (it is removed), or None."""
    path = os.path.join(state, flag)
    try:
        with open(path) as f:
            text = f.read()
        os.unlink(path)
        return text
    except FileNotFoundError:
        return None


def stalled():
    return os.path.exists(os.path.join(state, "stall"))


def close_pair(a, b):
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            raise EOFError
        buf += d
    return buf


def zombie():
    return os.path.exists(os.path.join(state, "zombie"))


class Hold:
    """A connection's reply held back (hold-multi): its xid, once armed."""

    def __init__(self):
        self.xid = None
        self.release = threading.Event()
        self.closed = threading.Event()


OP_SETDATA, OP_CHECK = 5, 13


def multi_ops(body):
    """The types of a transaction's ops, in order. After the request header
    (xid, type) each op is a header (type, done, err) and its request
    (jute: a string or buffer is an int32 length and its bytes); the last
    header has done set. [] for an op this does not know."""
    def skip_buf(i):
        (n,) = struct.unpack(">i", body[i:i + 4])
        return i + 4 + max(n, 0)
    ops, i = [], 8
    try:
        while True:
            t, done = struct.unpack(">ib", body[i:i + 5])
            i += 9
            if done:
                return ops
            ops.append(t)
            i = skip_buf(i)  # every op starts with its path
            if t in CREATE_OPS:
                i = skip_buf(i)  # data
                (nacl,) = struct.unpack(">i", body[i:i + 4])
                i += 4
                for _ in range(max(nacl, 0)):
                    i = skip_buf(skip_buf(i + 4))  # perms, scheme, id
                i += 4  # flags
            elif t == OP_SETDATA:
                i = skip_buf(i) + 4  # data, version
            elif t in (OP_DELETE, OP_CHECK):
                i += 4  # version
            else:
                return []
    except struct.error:
        return []


def creates_a_node(ops):
    """A transaction that makes a node and writes its data: [create,
    setData] (a flat lock's). A queue's first node with its parent, [create,
    create, setData], is not aimed at: its parent may be there, and then
    the whole transaction fails and nothing was made."""
    return len(ops) == 2 and ops[0] in CREATE_OPS and ops[1] == OP_SETDATA


def client_to_server(c, s, held, cutting, hold):
    first = True  # the connect request has no request header
    try:
        while True:
            head = read_exact(c, 4)
            (n,) = struct.unpack(">i", head)
            body = read_exact(c, n)
            xid, op = struct.unpack(">ii", body[:8]) if n >= 8 and not first else (0, -1)
            if zombie():
                if op == OP_PING:
                    c.sendall(PING_REPLY)  # the server side is silent now
                else:
                    event("zombie dropped op %d xid %d" % (op, xid))
                continue
            while held and stalled():
                threading.Event().wait(0.05)
            slow_down()
            if not first and hold.xid is not None and not hold.release.is_set():
                # the server applies the held commit once this one arrives
                hold.release.set()
                event("released reply to xid %d at op %d xid %d" % (hold.xid, op, xid))
            cut = None
            if not first and op in CREATE_OPS:
                cut = take("cut-after-create")
            elif not first and op == OP_DELETE:
                cut = take("cut-after-delete")
            elif not first and op == OP_MULTI:
                cut = take("cut-after-multi")
                if cut is None and creates_a_node(multi_ops(body)):
                    cut = take("cut-after-create")
                if cut is None:  # a release (with its guard, or its parent)
                    cut = take("cut-after-delete")
                if cut is None and hold.xid is None and take("hold-multi") is not None:
                    hold.xid = xid
                    event("holding reply to multi xid %d" % xid)
            if cut is not None:
                cutting.set()  # no reply of the server's reaches the client now
            s.sendall(head + body)
            if first:
                first = False
                continue
            if cut is not None:
                if cut.strip() == "stall":
                    open(os.path.join(state, "stall"), "w").close()
                event("cut after op %d xid %d" % (op, xid))
                break
    except (EOFError, OSError):
        pass
    hold.closed.set()
    close_pair(c, s)


def frames(buf, first):
    """The whole replies at the head of buf, as (xid, bytes), the rest of
    buf, and whether the connect response (no reply header) is still to
    come."""
    out = []
    while len(buf) >= 4:
        (n,) = struct.unpack(">i", buf[:4])
        if len(buf) < 4 + n:
            break
        xid = None if first or n < 4 else struct.unpack(">i", buf[4:8])[0]
        first = False
        out.append((xid, buf[:4 + n]))
        buf = buf[4 + n:]
    return out, buf, first


def hold_back(hold):
    """Waits for the client's next request; False if it hung up first."""
    while not hold.release.wait(0.05):
        if hold.closed.is_set():
            return False
    return True


def server_to_client(c, s, cutting, hold):
    buf, first = b"", True
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            slow_down()
            # split into replies, to find the one held back (hold-multi)
            whole, buf, first = frames(buf + d, first)
            send = not zombie() and not cutting.is_set()
            out = b""
            for xid, frame in whole:
                if xid is not None and xid == hold.xid and send:
                    c.sendall(out)  # what came before it goes on
                    out = b""
                    send = hold_back(hold)
                out += frame
            if send:
                c.sendall(out)
    except OSError:
        pass
    while zombie():
        threading.Event().wait(0.05)
    close_pair(c, s)


def read_delay():
    try:
        with open(os.path.join(state, "delay")) as f:
            v = [int(x) for x in f.read().split()]
        return tuple(v) if len(v) == 4 else None
    except (OSError, ValueError):
        return None


def watch_cut_now():
    global delay
    while True:
        d = read_delay()
        if d != delay:
            delay = d
            event("delay %s" % (" ".join(map(str, d)) if d else "off"))
        if take("cut-now") is not None:
            with lock:
                pairs = list(conns)
                del conns[:]
            for c, s in pairs:
                close_pair(c, s)
            event("cut %d connections" % len(pairs))
        threading.Event().wait(0.05)


def main():
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", listen_port))  # 0: any free port
    ls.listen(64)
    # written whole, then renamed: a reader that sees the file sees the
    # number (tests/chaos.py once read it empty)
    with open(os.path.join(state, "port.tmp"), "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(os.path.join(state, "port.tmp"), os.path.join(state, "port"))
    with open(os.path.join(state, "pid"), "w") as f:
        f.write("%d\n" % os.getpid())
    threading.Thread(target=watch_cut_now, daemon=True).start()
    while True:
        c, _ = ls.accept()
        try:
            s = socket.create_connection((server_host, int(server_port)), timeout=5)
            s.settimeout(None)
        except OSError:
            c.close()
            continue
        with lock:
            conns.append((c, s))
        held = stalled()
        event("connection" + (" stalled" if held else ""))
        cutting = threading.Event()
        hold = Hold()
        threading.Thread(target=client_to_server, args=(c, s, held, cutting, hold),
                         daemon=True).start()
        threading.Thread(target=server_to_client, args=(c, s, cutting, hold),
                         daemon=True).start()


main()
