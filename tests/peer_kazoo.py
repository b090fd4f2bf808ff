#!/usr/bin/env python3
"""peer_kazoo.py: the kazoo side of tests/peers.itest, and the critical
section both sides run on one fenced counter.

  peer_kazoo.py crit DIR TOKEN
      the critical section: fail if someone else is inside (an overlap) or
      if TOKEN is not above the last token the counter saw (fencing), then
      count one. Exit 0, or 3 after writing DIR/violations.
  peer_kazoo.py lock HOSTS PATH DIR N
      N times: take kazoo's Lock on PATH and run the critical section with
      the czxid of kazoo's own node as the token.

The counter is DIR/count, "COUNT LAST_TOKEN"; DIR/inside exists while
someone is in the critical section.
"""
import os
import sys
import time


def violation(d, what):
    with open(os.path.join(d, "violations"), "a") as f:
        f.write(what + "\n")
    return 3


def crit(d, token):
    inside = os.path.join(d, "inside")
    try:
        fd = os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return violation(d, "overlap: %d entered while another was inside" % token)
    os.close(fd)
    rc = 0
    with open(os.path.join(d, "count")) as f:
        count, last = (int(x) for x in f.read().split())
    if token <= last:
        rc = violation(d, "token %d after %d" % (token, last))
    time.sleep(0.01)  # give an overlap the time to show
    with open(os.path.join(d, "count.tmp"), "w") as f:
        f.write("%d %d\n" % (count + 1, max(token, last)))
    os.rename(os.path.join(d, "count.tmp"), os.path.join(d, "count"))
    os.unlink(inside)
    return rc


def lock_loop(hosts, path, d, n):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start(timeout=20)
    lock = zk.Lock(path, "kazoo-%d" % os.getpid())
    rc = 0
    for _ in range(n):
        with lock:
            token = zk.exists(path + "/" + lock.node).czxid
            rc = crit(d, token) or rc
    zk.stop()
    zk.close()
    return rc


def main(argv):
    if len(argv) == 4 and argv[1] == "crit":
        return crit(argv[2], int(argv[3]))
    if len(argv) == 6 and argv[1] == "lock":
        return lock_loop(argv[2], argv[3], argv[4], int(argv[5]))
    sys.stderr.write(__doc__)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv))
