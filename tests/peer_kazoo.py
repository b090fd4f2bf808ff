#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""peer_kazoo.py: the kazoo side of tests/peers.itest, and the critical
section both sides run on one fenced counter.

  peer_kazoo.py crit DIR TOKEN
      the critical section: fail if someone else is inside (an overlap) or
      if TOKEN is not above the last token the counter saw (fencing), then
      count one. Exit 0, or 3 after writing DIR/violations.
  peer_kazoo.py rwcrit DIR TOKEN read|write
      the critical section of a read-write lock: fail if a writer is inside
      with anyone else, or if TOKEN breaks the fencing rule of zklock.h (a
      write's token above every token seen, a read's above every write
      token seen), then count one.
  peer_kazoo.py lock HOSTS PATH DIR N [read|write]
      N times: take kazoo's Lock (or ReadLock, WriteLock) on PATH and run
      the critical section with the czxid of kazoo's own node as the token.
  peer_kazoo.py reacquire HOSTS PATH CMD...
      issue 23 (5): CMD (a zklock --kazoo that holds PATH for a while) runs
      and holds first, so its side made PATH; one kazoo Lock object takes
      PATH meanwhile (waiting for CMD), releases it, and once CMD has
      exited takes it again. kazoo checks the parent once per Lock object:
      the second acquire raises NoNodeError if zklock (or the server's
      sweep of a container) deleted it. Exit 0, or 3 with the reason.

PEER_HOLD_S in the environment sets how long a read-write section lasts
(default 0.02 s).

The counter is DIR/count, "COUNT LAST_TOKEN"; DIR/inside exists while
someone is in the critical section. For rwcrit, DIR/rw is "COUNT READERS
WRITERS LAST_TOKEN LAST_WRITE_TOKEN SHARED", under an flock of DIR/rw.lock;
SHARED counts the reads that found another reader inside.
"""
import fcntl
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


def rw_update(d, change):
    """Applies change(state) -> (state, violation or None) under the flock."""
    with open(os.path.join(d, "rw.lock"), "a") as lf:
        fcntl.flock(lf, fcntl.LOCK_EX)
        path = os.path.join(d, "rw")
        try:
            with open(path) as f:
                st = [int(x) for x in f.read().split()]
        except FileNotFoundError:
            st = [0, 0, 0, 0, 0, 0]
        st, bad = change(st)
        with open(path + ".tmp", "w") as f:
            f.write(" ".join(str(x) for x in st) + "\n")
        os.rename(path + ".tmp", path)
    return violation(d, bad) if bad else 0


def rwcrit(d, token, mode):
    write = mode == "write"

    def enter(st):
        count, readers, writers, last, last_w, shared = st
        bad = None
        if writers or (write and readers):
            bad = "overlap: %s %d entered with %d reader(s), %d writer(s) inside" % (
                mode, token, readers, writers)
        elif write and token <= last:
            bad = "write token %d after token %d" % (token, last)
        elif not write and token <= last_w:
            bad = "read token %d after write token %d" % (token, last_w)
        shared += 1 if not write and readers else 0
        readers, writers = readers + (not write), writers + write
        last = max(last, token)
        last_w = max(last_w, token) if write else last_w
        return [count, readers, writers, last, last_w, shared], bad

    def leave(st):
        st[0] += 1
        st[1] -= not write
        st[2] -= write
        return st, None

    rc = rw_update(d, enter)
    # give an overlap the time to show; the controls lengthen zklock's writes
    time.sleep(float(os.environ.get("PEER_HOLD_S", "0.02")))
    return rw_update(d, leave) or rc


def fixed_read_lock():
    """kazoo's ReadLock as kazoo 2.9 has it. Debian 12's kazoo 2.8.0 has
    python-zk/kazoo#649: a reader's own node matches none of the names it
    waits for, so it takes the highest writer in the whole queue, even one
    queued after it, for its predecessor, and a writer queued behind it
    closes a cycle (kazoo readers and writers alone deadlock). Fixed in
    2.9.0 (PR #650) by looking only at lower sequences; the same rule is
    written here, the rest of the recipe is kazoo's own."""
    import re

    from kazoo.recipe.lock import ReadLock

    class FixedReadLock(ReadLock):
        def _get_predecessor(self, node):
            mine = re.search(r"(-?\d{10})$", node).group(1)
            lower = []
            for child in self.client.get_children(self.path):
                m = self._contenders_re.search(child)
                if m is not None and m.group(1) < mine:
                    lower.append((m.group(1), child))
            return max(lower)[1] if lower else None

    return FixedReadLock


def lock_loop(hosts, path, d, n, mode=None):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start(timeout=20)
    ident = "kazoo-%d" % os.getpid()
    if mode == "read":
        lock = fixed_read_lock()(zk, path, ident)
    else:
        lock = {None: zk.Lock, "write": zk.WriteLock}[mode](path, ident)
    rc = 0
    for _ in range(n):
        with lock:
            token = zk.exists(path + "/" + lock.node).czxid
            rc = (rwcrit(d, token, mode) if mode else crit(d, token)) or rc
    zk.stop()
    zk.close()
    return rc


def reacquire(hosts, path, cmd):
    import subprocess

    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start(timeout=20)
    proc = subprocess.Popen(cmd)
    rc = 0
    try:
        end = time.time() + 20
        while time.time() < end:  # CMD holds first: its node is there
            try:
                if zk.get_children(path):
                    break
            except NoNodeError:
                pass
            time.sleep(0.02)
        else:
            print("reacquire: no node of zklock's under %s" % path)
            return 3
        lock = zk.Lock(path, "kazoo-%d" % os.getpid())
        if not lock.acquire(timeout=20):  # behind zklock's node
            print("reacquire: first acquire timed out")
            return 3
        lock.release()
        if proc.wait(timeout=30) != 0:
            print("reacquire: zklock exited %d" % proc.returncode)
            rc = 3
        # a container is swept once empty (every second on the test
        # ensemble), zklock's own delete comes at once
        time.sleep(2.5)
        try:
            if not lock.acquire(timeout=10):
                print("reacquire: second acquire timed out")
                return 3
            lock.release()
        except NoNodeError:
            print("reacquire: NoNodeError: the lock's parent was deleted")
            return 3
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        zk.stop()
        zk.close()
    return rc


def main(argv):
    if len(argv) == 4 and argv[1] == "crit":
        return crit(argv[2], int(argv[3]))
    if len(argv) == 5 and argv[1] == "rwcrit" and argv[4] in ("read", "write"):
        return rwcrit(argv[2], int(argv[3]), argv[4])
    if len(argv) == 6 and argv[1] == "lock":
        return lock_loop(argv[2], argv[3], argv[4], int(argv[5]))
    if len(argv) >= 5 and argv[1] == "reacquire":
        return reacquire(argv[2], argv[3], argv[4:])
    if len(argv) == 7 and argv[1] == "lock" and argv[6] in ("read", "write"):
        return lock_loop(argv[2], argv[3], argv[4], int(argv[5]), argv[6])
    sys.stderr.write(__doc__)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv))
