#!/usr/bin/env python3
"""chaos.py: fault-injection runs of zklock against a real ZooKeeper ensemble.

Starts a 3-node ensemble (each node in a network namespace of its own when
it can, so that nodes can be partitioned), one tests/zkproxy.py in front of
every node, a fenced store (in this process), and CLIENTS processes of
tests/chaos_client with THREADS threads each doing lock cycles on LOCKS
locks. While they run it injects faults, one at a time, in a seeded order:

  leader-kill       kill -9 the leader, restart it 1-4 s later
  follower-restart  SIGTERM a follower, restart it 1-4 s later
  partition         cut one node (leader or not) off every other node and
                    every client for 2 s .. session+2 s, then heal
  pause             SIGSTOP a client process inside a critical section (the
                    store stops it as it answers the client's read) for
                    session+2 s .. session+4 s, then SIGCONT: its hold is
                    gone, its late write must be refused by token, and its
                    unlock must return ZKL_ELOST
  cut               close client connections in a proxy: right after a
                    create or a delete was forwarded, or all at once
  slow              every proxy delays traffic (jitter, and stalls standing
                    for lost segments) for a few seconds

The store remembers, per lock, the highest fencing token it has seen and
refuses requests that carry a lower one. It logs every request, and the
checks run over that log afterwards:

  overlaps        critical sections that overlapped although the earlier
                  holder was not paused (zklock let two live holders in at
                  once), plus overlapping sections the store accepted
  lost_updates    the counter differs from the accepted writes, or an
                  accepted write did not add exactly one
  stale_accepted  an accepted request whose token was below one accepted
                  before it on the same lock
  fenced          overlaps explained by a paused holder, whose late request
                  the store refused (expected: that is what fencing is for)
  orphans         lock nodes left once every client has exited
  hung            clients that did not exit within the bound after SIGTERM

Every round prints one line, "chaos: seed=... result=PASS|FAIL"; the exit
status is 1 if any round failed. The seed fixes the fault schedule, the
clients' lock choices and the proxies' delays; replay a failure with the
same --seed (thread timing still varies from run to run).

--unlocked checks the checker: clients skip the lock, and the round must be
reported as FAIL with overlaps and lost updates; chaos.py then exits 0 only
if it was.
"""
import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

KINDS = ["leader-kill", "follower-restart", "partition", "pause", "cut", "slow"]


def log(msg):
    sys.stderr.write("chaos: %s %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


# ---- the fenced store ---------------------------------------------------------
class Store:
    """A resource that accepts a request only if its token is not below the
    highest token it has seen for that lock."""

    def __init__(self):
        self.mu = threading.Lock()
        self.reset()

    def reset(self):
        with self.mu:
            self.value = {}
            self.max_token = {}
            self.open = {}  # lock -> {token: (pid, t_begin)}
            self.events = []  # (t, lock, op, token, pid, accepted)
            self.raw_overlaps = []  # (lock, earlier_pid, t_earlier, t_later)
            self.rejected = 0
            self.pause_pid = None
            self.paused = threading.Event()

    def arm_pause(self, pid):
        """Stop pid (SIGSTOP) when it next reads under an accepted token: it
        is then stopped in its critical section, holding the lock."""
        with self.mu:
            self.paused.clear()
            self.pause_pid = pid

    def disarm_pause(self):
        with self.mu:
            self.pause_pid = None

    def handle(self, line):
        f = line.split()
        now = time.monotonic()
        op, lock, token, pid = f[0], int(f[1]), int(f[2]), int(f[4])
        with self.mu:
            top = self.max_token.get(lock, -1)
            accepted = token >= top
            self.events.append((now, lock, op, token, pid, accepted))
            opened = self.open.setdefault(lock, {})
            if not accepted:
                self.rejected += 1
                opened.pop(token, None)
                return "STALE %d" % top
            self.max_token[lock] = token
            if op == "B":
                for t, (p, tb) in opened.items():
                    if t != token:
                        self.raw_overlaps.append((lock, p, tb, now))
                opened.clear()
                opened[token] = (pid, now)
                if pid == self.pause_pid:
                    os.kill(pid, signal.SIGSTOP)
                    self.pause_pid = None
                    self.paused.set()
                return "OK %d" % self.value.get(lock, 0)
            opened.pop(token, None)
            self.value[lock] = int(f[5])
            return "OK"

    def serve(self):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", 0))
        ls.listen(256)
        self.port = ls.getsockname()[1]
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def _accept(self, ls):
        while True:
            c, _ = ls.accept()
            threading.Thread(target=self._conn, args=(c,), daemon=True).start()

    def _conn(self, c):
        f = c.makefile("rw", buffering=1)
        try:
            for line in f:
                f.write(self.handle(line) + "\n")
        except (OSError, ValueError, IndexError):
            pass
        c.close()

    def check(self, pauses):
        """(overlaps, fenced, lost_updates, stale_accepted, accepted writes)"""
        with self.mu:
            events = list(self.events)
            raw = list(self.raw_overlaps)
            value = dict(self.value)
        fenced = unexplained = 0
        for lock, pid, t0, t1 in raw:
            if any(p == pid and a < t1 and b > t0 for p, a, b in pauses):
                fenced += 1
            else:
                unexplained += 1
                if unexplained > 10:
                    continue
                log("UNEXPLAINED overlap on lock %d: pid %d began at %.3f, another at %.3f"
                    % (lock, pid, t0, t1))
        accepted_overlaps = lost = stale_ok = writes = 0
        last, top, count = {}, {}, {}
        for _, lock, op, token, _, ok in events:
            if not ok:
                continue
            if token < top.get(lock, -1):
                stale_ok += 1
            top[lock] = max(top.get(lock, -1), token)
            if op == "C":
                writes += 1
                count[lock] = count.get(lock, 0) + 1
                # the accepted write must directly follow its own read
                if last.get(lock) != ("B", token):
                    accepted_overlaps += 1
            last[lock] = (op, token)
        for lock, n in count.items():
            if value.get(lock, 0) != n:
                lost += 1
                log("lock %d: counter %d after %d accepted writes" % (lock, value.get(lock, 0), n))
        return unexplained + accepted_overlaps, fenced, lost, stale_ok, writes


# ---- the ensemble, through scripts/zk-ensemble.sh -------------------------------
class Ensemble:
    def __init__(self, srcdir, netns):
        self.script = os.path.join(srcdir, "scripts", "zk-ensemble.sh")
        self.env = dict(os.environ)
        self.env.pop("ZKL_ENSEMBLE_DIR", None)
        self.env["ZKL_NETNS"] = "1" if netns else "0"
        self.netns = netns
        self.dir = None

    def start(self):
        for attempt in range(10):
            base = 25180 + 10 * attempt
            self.env.update(ZKL_CLIENT_BASE=str(base), ZKL_QUORUM_BASE=str(base + 10000),
                            ZKL_ELECTION_BASE=str(base + 11000))
            r = subprocess.run(["bash", self.script, "start", "3"], env=self.env,
                               stdout=subprocess.PIPE, text=True)
            if r.returncode == 0:
                self.dir = r.stdout.strip().splitlines()[-1].split("=", 1)[1]
                self.env["ZKL_ENSEMBLE_DIR"] = self.dir
                return
            if r.returncode != 3:
                break
        raise SystemExit("chaos: could not start the ensemble")

    def run(self, *args, check=False):
        r = subprocess.run(["bash", self.script] + [str(a) for a in args], env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if check and r.returncode != 0:
            log("zk-ensemble %s failed: %s" % (" ".join(map(str, args)), r.stdout.strip()))
        return r.stdout.strip() if r.returncode == 0 else None

    def stop(self):
        if self.dir:
            self.run("stop")
            self.dir = None

    def servers(self):
        return [s for s in self.run("connect").split(",")]

    def leader(self):
        out = self.run("leader")
        return int(out) if out else None

    def healthy(self, secs):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if self.run("status") is not None:
                return True
            time.sleep(0.5)
        return False


def netns_usable():
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    name = "zklprobe%d" % os.getpid()
    ok = subprocess.run(["ip", "netns", "add", name], stderr=subprocess.DEVNULL).returncode == 0
    if ok:
        subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)
    return ok


# ---- proxies and clients ------------------------------------------------------------
class Proxy:
    def __init__(self, srcdir, server, state, seed):
        os.makedirs(state, exist_ok=True)
        self.state = state
        self.proc = subprocess.Popen([sys.executable, os.path.join(srcdir, "tests", "zkproxy.py"),
                                      "0", server, state, str(seed)])
        path = os.path.join(state, "port")
        end = time.monotonic() + 10
        while not os.path.exists(path) and time.monotonic() < end:
            time.sleep(0.05)
        with open(path) as f:
            self.addr = "127.0.0.1:%d" % int(f.read())

    def touch(self, name, text=""):
        with open(os.path.join(self.state, name + ".tmp"), "w") as f:
            f.write(text)
        os.rename(os.path.join(self.state, name + ".tmp"), os.path.join(self.state, name))

    def clear(self, name):
        try:
            os.unlink(os.path.join(self.state, name))
        except FileNotFoundError:
            pass

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def parse_client_line(line):
    return {k: int(v) for k, v in (f.split("=", 1) for f in line.split()[1:]) if v.isdigit()}


# ---- one round: clients, faults, checks ----------------------------------------------
class Round:
    def __init__(self, opts, ens, proxies, store, seed, kinds, work):
        self.o, self.ens, self.proxies, self.store = opts, ens, proxies, store
        self.seed, self.kinds, self.work = seed, kinds, work
        self.rng = random.Random(seed)
        self.faults = dict((k, 0) for k in kinds)
        self.pauses = []  # (pid, t_stop, t_cont)
        self.held_pauses = 0  # pauses that caught a holder inside
        self.held_by = {}  # client index -> such pauses
        self.per_client = {}  # client index -> its final counters
        self.procs = []

    def start_clients(self):
        exe = os.path.join(self.o.builddir, "tests", "chaos_client")
        hosts = ",".join(p.addr for p in self.proxies)
        for i in range(self.o.clients):
            out = open(os.path.join(self.work, "client%d.out" % i), "w")
            err = open(os.path.join(self.work, "client%d.err" % i), "w")
            cmd = [exe, "-s", hosts, "-r", self.o.root, "-l", self.o.locks, "-t", self.o.threads,
                   "-p", self.store.port, "-T", self.o.session_ms, "-i", i,
                   "-x", self.seed, "-u", self.o.think_us, "-W", self.o.wait_ms]
            cmd += ["-U"] if self.o.unlocked else []
            self.procs.append(subprocess.Popen([str(a) for a in cmd], stdout=out, stderr=err))
            out.close()
            err.close()

    def sleep(self, lo, hi):
        time.sleep(self.rng.uniform(lo, hi))

    def node_fault(self, kind):
        if not self.ens.healthy(90):
            log("ensemble not healthy after 90 s; injecting anyway")
        leader = self.ens.leader() or 1
        if kind == "leader-kill":
            node, how = leader, "kill-node"
        else:
            node = self.rng.choice([n for n in (1, 2, 3) if n != leader or kind == "partition"])
            how = "stop-node" if kind == "follower-restart" else "partition"
        log("%s: node %d (leader %d)" % (kind, node, leader))
        self.ens.run(how, node, check=True)
        try:
            if kind == "partition":
                self.sleep(2, self.o.session_ms / 1000.0 + 2)
            else:
                self.sleep(1, 4)
        finally:
            self.ens.run("heal" if kind == "partition" else "restart-node", node, check=True)

    def pause(self):
        i = self.rng.randrange(len(self.procs))
        p = self.procs[i]
        self.store.arm_pause(p.pid)
        self.store.paused.wait(10)
        self.store.disarm_pause()
        inside = self.store.paused.is_set()
        t0 = time.monotonic()
        log("pause: client %d (pid %d), %s" % (i, p.pid, "holding a lock" if inside
                                                   else "not seen in a critical section"))
        p.send_signal(signal.SIGSTOP)
        self.held_pauses += inside
        self.held_by[i] = self.held_by.get(i, 0) + inside
        try:
            # the server expires a silent session within T + one tick (1 s)
            # of the last ping, which came at most T/3 before the stop: stop
            # longer, so that every paused holder's session surely expires
            self.sleep(self.o.session_ms / 1000.0 + 2, self.o.session_ms / 1000.0 + 4)
        finally:
            p.send_signal(signal.SIGCONT)
            self.pauses.append((p.pid, t0, time.monotonic()))

    def cut(self):
        px = self.rng.choice(self.proxies)
        what = self.rng.choice(["cut-after-create", "cut-after-delete", "cut-now"])
        log("cut: %s in %s" % (what, px.addr))
        px.touch(what)
        self.sleep(1, 2)
        px.clear(what)

    def slow(self):
        spec = "%d %d %d %d" % (self.rng.randint(5, 30), self.rng.randint(0, 15),
                                self.rng.randint(5, 30), self.rng.randint(200, 600))
        log("slow: %s" % spec)
        for px in self.proxies:
            px.touch("delay", spec)
        try:
            self.sleep(3, 8)
        finally:
            for px in self.proxies:
                px.clear("delay")

    def inject(self, kind):
        self.faults[kind] += 1
        if kind in ("leader-kill", "follower-restart", "partition"):
            self.node_fault(kind)
        else:
            getattr(self, kind)()

    def stop_clients(self):
        for p in self.procs:
            p.send_signal(signal.SIGCONT)
            p.send_signal(signal.SIGTERM)
        end, hung, failed = time.monotonic() + self.o.stop_bound, 0, 0
        for p in self.procs:
            try:
                rc = p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                log("client pid %d did not exit within %d s: killing it" % (p.pid, self.o.stop_bound))
                p.kill()
                p.wait()
                hung += 1
                continue
            if rc != 0:
                failed += 1
        return hung, failed

    def client_totals(self):
        tot = {}
        for i in range(len(self.procs)):
            with open(os.path.join(self.work, "client%d.out" % i)) as f:
                lines = [line for line in f if "cycles=" in line]
            with open(os.path.join(self.work, "client%d.err" % i)) as f:
                err = f.read().strip()
            if err:
                log("client %d stderr:\n%s" % (i, err[-2000:]))
            self.per_client[i] = parse_client_line(lines[-1]) if lines else {}
            for k, v in self.per_client[i].items():
                tot[k] = max(tot.get(k, 0), v) if k == "max_wait_ms" else tot.get(k, 0) + v
        return tot

    def orphans(self):
        """Lock nodes left. A client that exited while cut off could not
        close its session: its nodes go when the session expires, so only
        what is still there two session timeouts later counts."""
        end = time.monotonic() + 2 * self.o.session_ms / 1000.0 + 5
        while True:
            n = self.count_nodes()
            if n == 0 or time.monotonic() >= end:
                return n
            time.sleep(0.5)

    def count_nodes(self):
        exe = os.path.join(self.o.builddir, "tests", "locker")
        n = 0
        for k in range(self.o.locks):
            r = subprocess.run([exe, "list", "-s", ",".join(self.ens.servers()), "-r", self.o.root,
                                "-n", "l%d" % k], stdout=subprocess.PIPE, text=True, timeout=60)
            for line in r.stdout.splitlines():
                if line.startswith("contenders="):
                    n += int(line.split("=")[1])
        return n

    def run(self, number):
        self.store.reset()
        self.start_clients()
        t_start = time.monotonic()
        end = t_start + self.o.duration
        order = []
        while True:
            if not order:
                order = list(self.kinds)
                self.rng.shuffle(order)
            kind = order.pop()
            self.sleep(1, 3)
            if time.monotonic() >= end:
                break
            self.inject(kind)
        self.ens.healthy(90)
        hung, failed = self.stop_clients()
        secs = time.monotonic() - t_start
        tot = self.client_totals()
        overlaps, fenced, lost_updates, stale_ok, writes = self.store.check(self.pauses)
        orphans = self.orphans()
        bad = []
        if overlaps:
            bad.append("overlaps")
        if lost_updates:
            bad.append("lost updates")
        if stale_ok:
            bad.append("stale tokens accepted")
        if orphans:
            bad.append("orphan nodes")
        if hung or failed:
            bad.append("clients hung or failed")
        # a holder stopped past its session must learn that its hold is gone
        unaware = sum(1 for i, n in self.held_by.items()
                      if self.per_client.get(i, {}).get("lost", 0) < n)
        if unaware:
            bad.append("%d paused holder(s) never saw ZKL_ELOST" % unaware)
        if tot.get("timeouts", 0) or tot.get("errors", 0):
            bad.append("acquire timeouts or errors")
        if writes != tot.get("written", -1):
            bad.append("store saw %d writes, clients %d" % (writes, tot.get("written", -1)))
        if tot.get("cycles", 0) == 0:
            bad.append("no cycles")
        faults = ",".join("%s:%d" % (k, self.faults[k]) for k in self.kinds)
        print("chaos: seed=%d round=%d secs=%d clients=%d threads=%d locks=%d session_ms=%d "
              "cycles=%d written=%d faults=%s paused_in_cs=%d overlaps=%d lost_updates=%d stale_rejected=%d "
              "stale_accepted=%d fenced=%d lost_holds=%d orphans=%d hung=%d failed=%d "
              "timeouts=%d errors=%d max_wait_ms=%d result=%s"
              % (self.seed, number, secs, self.o.clients, self.o.threads, self.o.locks,
                 self.o.session_ms, tot.get("cycles", 0), writes, faults, self.held_pauses, overlaps, lost_updates,
                 self.store.rejected, stale_ok, fenced, tot.get("lost", 0), orphans, hung, failed,
                 tot.get("timeouts", 0), tot.get("errors", 0), tot.get("max_wait_ms", 0),
                 "FAIL(%s)" % "; ".join(bad) if bad else "PASS"), flush=True)
        if self.o.unlocked:
            caught = overlaps > 0 and lost_updates > 0
            print("chaos: checker self-test: running without the lock was %s"
                  % ("caught" if caught else "NOT caught"), flush=True)
            return caught
        return not bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builddir", default=".", help="where tests/chaos_client was built")
    ap.add_argument("--srcdir", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--duration", type=int, default=120, help="seconds of faults per round")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--until", type=int, default=0,
                    help="keep starting rounds until this many seconds have passed")
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock, printed")
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--locks", type=int, default=3)
    ap.add_argument("--session-ms", type=int, default=4000)
    ap.add_argument("--think-us", type=int, default=2000)
    ap.add_argument("--wait-ms", type=int, default=120000,
                    help="acquire bound: a longer wait counts as a hang")
    ap.add_argument("--stop-bound", type=int, default=60,
                    help="seconds a client may take to exit after SIGTERM")
    ap.add_argument("--root", default="/chaos")
    ap.add_argument("--unlocked", action="store_true",
                    help="clients skip the lock: the checks must fail")
    ap.add_argument("--faults", default=",".join(KINDS))
    ap.add_argument("--netns", choices=["auto", "yes", "no"], default="auto",
                    help="nodes in network namespaces (needed for partition)")
    o = ap.parse_args()
    o.builddir = os.path.abspath(o.builddir)
    kinds = [k for k in o.faults.split(",") if k]
    for k in kinds:
        if k not in KINDS:
            ap.error("unknown fault %r (known: %s)" % (k, ", ".join(KINDS)))
    netns = o.netns == "yes" or (o.netns == "auto" and netns_usable())
    if "partition" in kinds and not netns:
        if o.netns == "yes":
            raise SystemExit("chaos: network namespaces are not usable here")
        log("network namespaces are not usable here (root and iproute2 needed): no partitions")
        kinds.remove("partition")
    seed = o.seed if o.seed is not None else int(time.time()) % 100000
    log("seed %d; faults %s; replay with --seed %d" % (seed, ",".join(kinds), seed))

    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    work = tempfile.mkdtemp(prefix="zklchaos.")
    ens, proxies, ok, rounds = Ensemble(o.srcdir, netns), [], True, 0
    t0 = time.monotonic()
    try:
        ens.start()
        store = Store()
        store.serve()
        for i, server in enumerate(ens.servers()):
            proxies.append(Proxy(o.srcdir, server, os.path.join(work, "proxy%d" % i), seed + i))
        while rounds < o.rounds or time.monotonic() - t0 + o.duration <= o.until:
            r = Round(o, ens, proxies, store, seed + rounds, kinds, work)
            try:
                ok = r.run(rounds) and ok
            finally:
                for p in r.procs:
                    if p.poll() is None:
                        p.send_signal(signal.SIGCONT)
                        p.kill()
                        p.wait()
            rounds += 1
    finally:
        for px in proxies:
            px.stop()
        ens.stop()
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log("logs kept in %s" % work)
    if rounds > 1:
        print("chaos: %d rounds in %d s, %s" % (rounds, time.monotonic() - t0,
                                               "all passed" if ok else "SOME FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
