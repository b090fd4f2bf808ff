#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kazoo_family: the read-heavy and semaphore workloads of zklock-bench for
kazoo (ReadLock/WriteLock, Semaphore), with the harness's flags and JSON
lines; its helpers (flags, mntr counters, JSON) come from the harness's own
kazoo driver, ../shared/bench/kazoo/kazoo_bench.py.

  /usr/bin/python3 bench/peers/kazoo_family.py -w read-heavy,semaphore -C 9 -M 2000 [--leases 2]

Debian 12's kazoo 2.8.0 ReadLock deadlocks as soon as a writer queues behind
a reader (python-zk/kazoo#649, fixed in 2.9.0): its readers here are the 2.9
ones, as in tests/peer_kazoo.py.
"""
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(TOP), "shared", "bench", "kazoo"))
sys.path.insert(0, os.path.join(TOP, "tests"))
import kazoo_bench as kb  # noqa: E402
from peer_kazoo import fixed_read_lock  # noqa: E402

LEASES = 2


def workload(zk, base, name, sem):
    path = base + "/" + name
    clients, m = kb.ARGS.clients, kb.ARGS.m
    mu = threading.Lock()
    st = {"tickets": 0, "readers": 0, "writers": 0, "peak": 0, "violations": 0,
          "counter": 0, "writes": 0}
    waits = [[] for _ in range(clients)]
    zks = [kb.new_client() for _ in range(clients)]
    zk.ensure_path(path)
    go = threading.Event()
    errors = []
    ReadLock = fixed_read_lock()

    def ticket():
        with mu:
            st["tickets"] += 1
            return st["tickets"] <= m

    def add(key, d):
        with mu:
            st[key] += d
            return st[key]

    def worker(i):
        write = not sem and i % 9 == 0
        try:
            if sem:
                lock = zks[i].Semaphore(path, "c%d" % i, max_leases=LEASES)
            elif write:
                lock = zks[i].WriteLock(path, "c%d" % i)
            else:
                lock = ReadLock(zks[i], path, "c%d" % i)
            go.wait()
            while ticket():
                a = kb.now_ns()
                lock.acquire()
                waits[i].append(kb.now_ns() - a)
                if sem:
                    now = add("readers", 1)
                    with mu:
                        st["peak"] = max(st["peak"], now)
                        st["violations"] += now > LEASES
                    add("readers", -1)
                elif write:
                    with mu:
                        st["violations"] += st["writers"] != 0 or st["readers"] != 0
                        st["writers"] += 1
                    st["counter"] += 1  # only the lock protects it
                    with mu:
                        st["writes"] += 1
                        st["writers"] -= 1
                else:
                    now = add("readers", 1)
                    with mu:
                        st["peak"] = max(st["peak"], now)
                        st["violations"] += st["writers"] != 0
                    add("readers", -1)
                lock.release()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in ts:
        t.start()
    ctr = kb.Counters()
    ctr.begin()
    t0 = kb.now_ns()
    go.set()
    for t in ts:
        t.join()
    el = kb.now_ns() - t0
    all_waits = [w for ws in waits for w in ws]
    r = kb.timed_result(name, len(all_waits), el, all_waits)
    ctr.end(r, m)
    for z in zks:
        z.stop()
        z.close()
    if errors:
        raise errors[0]
    r["clients"] = clients
    if sem:
        r["leases"] = LEASES
        r["peak_inside"] = st["peak"]
    else:
        r["writers"] = (clients + 8) // 9
        r["writes"] = st["writes"]
        r["peak_readers"] = st["peak"]
        r["counter_ok"] = st["counter"] == st["writes"]
    r["violations"] = st["violations"]
    kb.emit(r)
    kb.cleanup(zk, path)


def main(argv):
    global LEASES
    mine, rest, i = [], [], 0
    while i < len(argv):
        f = argv[i]
        v = None
        if f.startswith("--") and "=" in f:
            f, v = f.split("=", 1)
        elif f in ("--leases", "-w", "--workloads") and i + 1 < len(argv):
            i += 1
            v = argv[i]
        if f == "--leases":
            LEASES = int(v)
        elif f in ("-w", "--workloads"):
            mine += [w for w in v.split(",") if w]
        else:
            rest.append(argv[i])
        i += 1
    kb.ARGS = kb.parse_args(rest + ["-w", "contended"])
    kb.IMPL_VERSION += " (ReadLock as in 2.9, WriteLock, Semaphore)"
    base = "%s/kazoo-family-%d-%x" % (kb.ARGS.root, os.getpid(), kb.now_ns())
    zk = kb.new_client()
    rc = 0
    try:
        zk.ensure_path(base)
        for w in mine:
            try:
                if w not in ("read-heavy", "semaphore"):
                    raise ValueError("unknown workload %s" % w)
                workload(zk, base, w, w == "semaphore")
            except Exception as e:
                rc = 1
                kb.emit({"impl": kb.IMPL, "workload": w, "error": repr(e)})
    finally:
        kb.cleanup(zk, base)
        zk.stop()
        zk.close()
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
