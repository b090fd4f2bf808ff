#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
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
  hostile           a rogue session (tests/chaos_rogue, straight to the
                    ensemble, not through the proxies) plants nodes with
                    contender-like names in every lock directory: persistent
                    ones (a low sequence, and sequences 2^31 apart) that
                    stay until the round ends, and ephemeral ones, some in a
                    cycle of serial-number order, that go after a second or
                    two; data full of escapes, CRs and NULs. Then, a few
                    times, on a random lock: rewrites the node of the holder
                    (caught by the store as it answers the holder's read, so
                    the hold is surely inside its critical section; a
                    rewrite ends the hold as LOST, as a delete does), deletes
                    it, deletes it and re-creates it (persistent, or ephemeral
                    on the rogue's session, removed when the fault ends), or
                    deletes the node of the last waiter

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
  orphans         lock nodes left once every client has exited (the
                  rogue's own nodes, removed at the end of the round, are
                  told apart by ephemeral owner and creation zxid)
  hung            clients that did not exit within the bound after SIGTERM

and for the hostile fault (clients tell the store every hold they learn is
LOST, by unlock's ZKL_ELOST or by the state callback, with its token):

  deleted_holds_reported  holds whose node the rogue deleted (or deleted and
                  re-created) must all be reported LOST; an overlap behind
                  such a hold counts as fenced only if it was reported and
                  its late request was refused by token
  revoked         acquires that ended in ZKL_EREVOKED (counted, retried):
                  as many as the rogue's deletes of waiting nodes; an
                  acquire that returns ZKL_OK after its waiting node was
                  deleted fails the round (where the victim may have held
                  already, the tail of a read-write lock's or semaphore's
                  queue, its hold may have begun first: it must then be
                  reported LOST, as any deleted hold)
  stalled         a lock on which nobody entered the critical section for
                  15 s after the ephemeral planted nodes were gone (zklock
                  waited behind a node that never goes away)
  stolen          nodes the rogue re-created at a holder's path that
                  someone else deleted (information: an unlock that had not
                  yet heard of the re-create deletes it in the same round
                  trip as it learns of it, and reports ZKL_ELOST, as
                  zklock.h documents; it stands at a name only that holder
                  may use)
  rogue_left      the rogue's nodes still there after its cleanup

--acl creator runs the clients authenticated (digest chaos:secret) with
zklock's creator ACL, and the rogue with another digest identity: each of
its writes under the lock directories must fail with ZNOAUTH (noauth), it
may change nothing, and if hostile is the only fault no hold may be lost.

Every round prints one line, "chaos: seed=... result=PASS|FAIL"; the exit
status is 1 if any round failed. The seed fixes the fault schedule, the
clients' lock choices and the proxies' delays; replay a failure with the
same --seed (thread timing still varies from run to run).

--recipe picks what the clients take, one recipe per round in turn:
mutexes; read-write locks (three reads to one write, half the writes
downgrade and read on; a write must carry a token at least the highest
seen, a read one at least the highest write token); semaphores of
--leases leases (more than that inside at once is an overlap); multi, two
locks a cycle, nested in one fixed order, as one multi-lock (named in
either order) or one alone, all at once on the same locks: a wait cycle
among them shows as a stall.

mixed, everyone at once on the same locks: the library clients draw
each cycle from blocking and asynchronous mutexes, multi-locks (nested,
whole, or one lock alone), reads of a read-write lock of the same name,
and flat locks (on locks f0.., the store's FLAT_ID + k), while --cli
threads here run zklock(1) on the same locks: -n -E 0 (the cron idiom:
skip quietly), -w, --shared, --flat and --also. Every zklock COMMAND that
ran must have had a token, and a run that exited 0 must have had every
request of its accepted: zklock's 0 vouches for the whole run. A run
that exited 75 (lost) is told to the store as a lost hold, as a client
tells its ZKL_ELOST.

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

KINDS = ["leader-kill", "follower-restart", "partition", "pause", "cut", "slow", "hostile"]
CLIENT_AUTH = "digest:chaos:secret"
ROGUE_AUTH = "digest:rogue:secret"
# how long a lock may go without a holder, with nothing in its way, before
# the hostile fault calls it stalled
STALL_S = 15


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

    def reset(self, leases=0):
        with self.mu:
            self.leases = leases  # a semaphore's: how many may be inside
            self.value = {}
            self.max_token = {}
            self.max_write = {}  # read-write locks: the highest write token
            self.open = {}  # lock -> {token: (pid, t_begin)}
            self.events = []  # (t, lock, op, token, pid, accepted)
            self.raw_overlaps = []  # (lock, earlier_pid, earlier_token, t_earlier, t_later)
            self.rejected = 0
            self.pause_pid = None
            self.paused = threading.Event()
            self.lost_reports = {}  # (lock, token) -> how the client learnt it
            self.refused = set()  # (lock, token) of refused requests
            self.seen = set()  # (lock, token) of every B or C
            self.acquired = {}  # (lock, token) -> when its acquire returned
            self.rogue_arm = None  # (lock, fn)
            self.lease_keys = set()  # (lock, token) of semaphore leases

    def arm_pause(self, pid):
        """Stop pid (SIGSTOP) when it next reads under an accepted token: it
        is then stopped in its critical section, holding the lock."""
        with self.mu:
            self.paused.clear()
            self.pause_pid = pid

    def disarm_pause(self):
        with self.mu:
            self.pause_pid = None

    def arm_rogue(self, lock, fn):
        """Call fn(lock, token) when a holder of lock next reads under an
        accepted token, before answering it: the holder is then inside its
        critical section for as long as fn runs."""
        with self.mu:
            self.rogue_arm = (lock, fn)

    def disarm_rogue(self):
        """True if the armed call had not fired (and now will not)."""
        with self.mu:
            armed, self.rogue_arm = self.rogue_arm is not None, None
            return armed

    def handle(self, line):
        """B/C: a write section (read, then write back) under the lock's
        token, accepted if no higher token was seen. R/E: a read section of
        a read-write lock, accepted if no higher write token was seen. S/E:
        a semaphore lease's section, never refused (leases do not exclude
        each other), an overlap when more than `leases` are inside."""
        f = line.split()
        now = time.monotonic()
        op, lock, token, pid = f[0], int(f[1]), int(f[2]), int(f[4])
        if op == "L":
            with self.mu:
                self.lost_reports.setdefault((lock, token), f[5] if len(f) > 5 else "?")
            return "OK"
        action = None
        with self.mu:
            opened = self.open.setdefault(lock, {})
            kind = {"B": "w", "C": "w", "R": "r", "S": "s"}.get(op) or \
                (opened[token][2] if token in opened else "r")
            if kind == "s":
                accepted, top = True, 0
                op = "F" if op == "E" else op  # a lease's end: never fenced
            elif kind == "r":
                top = self.max_write.get(lock, -1)
                accepted = token >= top
            else:
                top = self.max_token.get(lock, -1)
                accepted = token >= top
            self.events.append((now, lock, op, token, pid, accepted))
            self.seen.add((lock, token))
            if op in ("B", "R", "S") and len(f) > 5:
                self.acquired.setdefault((lock, token), int(f[5]) / 1000.0)
            if not accepted:
                self.rejected += 1
                self.refused.add((lock, token))
                opened.pop(token, None)
                return "STALE %d" % top
            if kind != "s":
                self.max_token[lock] = max(token, self.max_token.get(lock, -1))
            if kind == "w":
                self.max_write[lock] = token
            if op in ("B", "R", "S"):
                if op == "B":
                    others = [t for t in opened if t != token]
                elif op == "R":
                    others = [t for t, e in opened.items() if t != token and e[2] == "w"]
                else:
                    self.lease_keys.add((lock, token))
                    inside = sorted((e[1], t) for t, e in opened.items() if t != token)
                    others = [t for _, t in inside[:max(0, len(inside) - self.leases + 1)]]
                for t in others:
                    p, tb, _ = opened[t]
                    self.raw_overlaps.append((lock, p, t, tb, now))
                if op == "B":
                    opened.clear()
                opened[token] = (pid, now, kind)
                if pid == self.pause_pid:
                    os.kill(pid, signal.SIGSTOP)
                    self.pause_pid = None
                    self.paused.set()
                if self.rogue_arm and self.rogue_arm[0] == lock and token > 0:
                    action, self.rogue_arm = self.rogue_arm[1], None
                reply = "OK %d" % self.value.get(lock, 0) if op != "S" else "OK"
            else:
                opened.pop(token, None)
                if op == "C":
                    self.value[lock] = int(f[5])
                reply = "OK"
        if action:
            action(lock, token)
        return reply

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

    def check(self, pauses, rogue_deleted):
        """(overlaps, fenced, lost_updates, stale_accepted, accepted writes)

        An overlap is fenced if the earlier holder was paused meanwhile, or
        if the rogue deleted its node, it was told LOST, and a request of
        its was refused by token."""
        with self.mu:
            events = list(self.events)
            raw = list(self.raw_overlaps)
            value = dict(self.value)
            reported = set(self.lost_reports)
            refused = set(self.refused)
            leases = set(self.lease_keys)
        fenced = unexplained = 0
        for lock, pid, token, t0, t1 in raw:
            key = (lock, token)
            if any(p == pid and a < t1 and b > t0 for p, a, b in pauses):
                fenced += 1
            elif key in rogue_deleted and key in reported and (key in refused or key in leases):
                # a lease has no token rule: its holder being told is all
                fenced += 1
            else:
                unexplained += 1
                if unexplained > 10:
                    continue
                log("UNEXPLAINED overlap on lock %d: pid %d (token %d) began at %.3f, another at "
                    "%.3f%s" % (lock, pid, token, t0, t1,
                               " (its node deleted by the rogue; reported LOST: %s, refused: %s)"
                               % (key in reported, key in refused) if key in rogue_deleted else ""))
        accepted_overlaps = lost = stale_ok = writes = 0
        last, top, topw, count = {}, {}, {}, {}
        for _, lock, op, token, _, ok in events:
            if not ok or op in ("S", "F"):
                continue
            if op in ("R", "E"):  # reads: fenced by writes only
                if token < topw.get(lock, -1):
                    stale_ok += 1
                top[lock] = max(top.get(lock, -1), token)
                continue
            if token < top.get(lock, -1):
                stale_ok += 1
            top[lock] = max(top.get(lock, -1), token)
            topw[lock] = max(topw.get(lock, -1), token)
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


class Rogue:
    """tests/chaos_rogue: one session straight to the ensemble, one
    command at a time over a pipe (its header lists them)."""

    def __init__(self, exe, hosts, root, locks, auth, errpath):
        cmd = [exe, "-s", hosts, "-r", root, "-l", str(locks), "-T", "20000"]
        cmd += ["-a", auth] if auth else []
        with open(errpath, "w") as err:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, bufsize=1)
        self.cv = threading.Condition()
        self.replies, self.next, self.dead = {}, 0, False
        # it gives up by itself after 60 s without a session
        first = self.proc.stdout.readline()
        if not first.startswith("ready"):
            self.stop()
            raise SystemExit("chaos: the rogue session did not start (see %s)" % errpath)
        self.session = first.split("=", 1)[1].strip()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            f = line.split()
            if f and f[0].isdigit():
                with self.cv:
                    self.replies[int(f[0])] = dict(kv.split("=", 1) for kv in f[1:] if "=" in kv)
                    self.cv.notify_all()
        with self.cv:
            self.dead = True
            self.cv.notify_all()

    def call(self, cmd, timeout=90):
        """The reply as a dict, or None (rogue gone, or no answer in time:
        each of its requests retries for up to 20 s through connection loss)."""
        with self.cv:
            self.next += 1
            n = self.next
            try:
                self.proc.stdin.write("%d %s\n" % (n, cmd))
                self.proc.stdin.flush()
            except (OSError, ValueError):
                self.dead = True
            end = time.monotonic() + timeout
            while n not in self.replies and not self.dead and time.monotonic() < end:
                self.cv.wait(end - time.monotonic())
            r = self.replies.pop(n, None)
        if r is None:
            log("rogue: no answer to %r" % cmd)
        return r

    def stop(self):
        """Its exit status (under a sanitizer, not 0 if it found a bug)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def num(reply, key):
    try:
        return int((reply or {}).get(key, 0))
    except ValueError:
        return 0


# chaos_client -m mixed: the store's number of flat lock fK is FLAT_ID + k
FLAT_ID = 32

# A zklock COMMAND of the mixed round: one section per lock under
# $ZKLOCK_TOKEN, written to the store with bash's /dev/tcp. Its marker
# file says it ran, with which token, each write and each refusal.
#   $1 marker  $2 store port  $3 w|r  $4 user id  $5... store lock numbers
CLI_SECTION = r"""
# as a client's thread, never skip a request because the hold was lost:
# the store, not the user, must turn a late writer away (zklock sends
# SIGTERM on a loss, then SIGKILL -k seconds later)
trap '' TERM INT HUP
m=$1 port=$2 op=$3 id=$4; shift 4
echo "RAN ${ZKLOCK_TOKEN:-none}" >"$m"
case ${ZKLOCK_TOKEN:-0} in 0|*[!0-9]*) echo NOTOKEN >>"$m"; exit 0 ;; esac
exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo NOSTORE >>"$m"; exit 0; }
for k in "$@"; do
  if [ "$op" = r ]; then
    echo "R $k $ZKLOCK_TOKEN $id $$" >&3; read -r rep <&3
    case $rep in OK*) ;; *) echo "STALE $k" >>"$m" ;; esac
    echo "E $k $ZKLOCK_TOKEN $id $$" >&3; read -r rep <&3
    case $rep in OK*) ;; *) echo "STALE $k" >>"$m" ;; esac
  else
    echo "B $k $ZKLOCK_TOKEN $id $$" >&3; read -r rep <&3
    case $rep in
      "OK "*) echo "C $k $ZKLOCK_TOKEN $id $$ $((${rep#OK } + 1))" >&3; read -r rep <&3
              case $rep in OK*) echo "WROTE $k" >>"$m" ;; *) echo "STALE $k" >>"$m" ;; esac ;;
      *) echo "STALE $k" >>"$m" ;;
    esac
  fi
done
echo DONE >>"$m"
"""


class CliUsers:
    """zklock(1) users of a mixed round, one thread each, beside the
    library clients on the same locks and through the same proxies."""

    MODES = ["skip", "wait", "shared", "flat", "also"]

    def __init__(self, o, proxies, store, seed, work):
        self.o, self.store, self.work = o, store, work
        self.hosts = ",".join(p.addr for p in proxies)
        self.seed = seed
        self.stopping = threading.Event()
        self.mu = threading.Lock()
        self.fig = dict((k, 0) for k in ("runs", "ran", "written", "skipped", "gave_up", "lost",
                                          "revoked", "unreachable", "errors", "violations"))
        self.threads = []

    def start(self, n):
        for w in range(n):
            t = threading.Thread(target=self.worker, args=(w,), daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(self.o.session_ms / 1000.0 + 60)
        return sum(t.is_alive() for t in self.threads)

    def count(self, key, n=1):
        with self.mu:
            self.fig[key] += n

    def violation(self, why):
        log("CLI VIOLATION: %s" % why)
        self.count("violations")

    def worker(self, w):
        rng = random.Random(self.seed * 7919 + w)
        uid = 1000 + w
        exe = self.o.zklock or os.path.join(self.o.builddir, "tools", "zklock")
        n = 0
        while not self.stopping.is_set():
            mode, k = rng.choice(self.MODES), rng.randrange(self.o.locks)
            j = (k + 1 + rng.randrange(self.o.locks - 1)) % self.o.locks
            args, op, ids, name = ["-w", "3", "-E", "3"], "w", [k], "l%d" % k
            if mode == "skip":
                args = ["-n", "-E", "0"]
            elif mode == "shared":
                args, op = args + ["--shared"], "r"
            elif mode == "flat":
                args, ids, name = args + ["--flat"], [FLAT_ID + k], "f%d" % k
            elif mode == "also":
                args, ids = args + ["--also", "l%d" % j], [k, j]
            n += 1
            mark = os.path.join(self.work, "cli%d-%d.mark" % (w, n))
            cmd = [exe, "-s", self.hosts, "-r", self.o.root, "-t", str(self.o.session_ms),
                   "-k", "10"] + args + [name, "bash", "-c", CLI_SECTION, "_", mark,
                                        str(self.store.port), op, str(uid)] + [str(i) for i in ids]
            try:
                r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, timeout=self.o.session_ms / 1000.0 * 3 + 30)
                rc, err = r.returncode, r.stderr.strip()
            except subprocess.TimeoutExpired:
                rc, err = -1, "timed out"
            self.judge(mode, args, name, ids, rc, err, mark)
            if os.path.exists(mark):
                os.unlink(mark)

    def judge(self, mode, args, name, ids, rc, err, mark):
        what = "zklock %s %s" % (" ".join(args), name)
        lines = open(mark).read().split("\n") if os.path.exists(mark) else []
        ran = bool(lines) and lines[0].startswith("RAN")
        token = lines[0].split()[1] if ran else ""
        refused = [x for x in lines if x.startswith(("STALE", "NOTOKEN", "NOSTORE"))]
        self.count("runs")
        self.count("written", sum(1 for x in lines if x.startswith("WROTE")))
        conflict = 0 if mode == "skip" else 3
        if ran:
            self.count("ran")
            if "NOTOKEN" in refused:
                self.violation("%s: COMMAND ran without a token (%s), exit %d" % (what, token, rc))
            elif rc == 0 and refused:
                self.violation("%s: exit 0, but the store refused %s (token %s)"
                               % (what, ",".join(refused), token))
            elif rc == 0 and "DONE" not in lines:
                self.violation("%s: exit 0, but COMMAND did not finish" % what)
            elif rc == conflict and mode != "skip":
                self.violation("%s: COMMAND ran, yet exit %d (could not lock)" % (what, rc))
        if rc == 0 and not ran:
            if mode == "skip":
                self.count("skipped")
            else:
                self.violation("%s: exit 0 and COMMAND never ran" % what)
        elif rc == conflict and not ran and mode != "skip":
            self.count("gave_up")
        elif rc == 75:
            self.count("lost")
            if ran and token.isdigit():
                for i in ids:
                    self.store.handle("L %d %s cli 0 zklock-75" % (i, token))
        elif rc == 69:
            self.count("unreachable")
        elif rc == 70 and "revoked" in err:
            self.count("revoked")
        elif rc != 0:
            self.count("errors")
            log("%s: exit %d: %s" % (what, rc, err[-300:]))


def parse_client_line(line):
    return {k: int(v) for k, v in (f.split("=", 1) for f in line.split()[1:]) if v.isdigit()}


# ---- one round: clients, faults, checks ----------------------------------------------
class Round:
    def __init__(self, opts, ens, proxies, store, rogue, seed, kinds, work, recipe, bag):
        self.o, self.ens, self.proxies, self.store = opts, ens, proxies, store
        self.recipe = recipe
        self.rogue = rogue
        self.seed, self.kinds, self.work = seed, kinds, work
        # the fault kinds still to draw, shared by the rounds of a run: a
        # round too short for every kind leaves the rest to the next one
        self.bag = bag
        self.rng = random.Random(seed)
        self.faults = dict((k, 0) for k in kinds)
        self.pauses = []  # (pid, t_stop, t_cont)
        self.held_pauses = 0  # pauses that caught a holder inside
        self.held_by = {}  # client index -> such pauses
        self.per_client = {}  # client index -> its final counters
        self.procs = []
        # the rogue's work; its figures are updated from store threads
        self.hmu = threading.Lock()
        self.hfig = dict((k, 0) for k in ("planted", "rewritten", "deleted", "recreated", "noauth"))
        self.rogue_deleted = {}  # (lock, token) -> when the delete was confirmed
        self.rogue_unsure = set()  # of those, deletes whose answer was lost
        self.rogue_rewritten = set()  # (lock, token)
        self.rogue_errors = 0
        self.stalled = 0
        self.rogue_left = 0
        self.stolen = 0  # re-created nodes deleted by the holder they replaced

    def client_log(self, i, ext):
        # one pair per round: a failed round's logs outlive the rounds after it
        return os.path.join(self.work, "seed%d-client%d.%s" % (self.seed, i, ext))

    def start_clients(self):
        exe = os.path.join(self.o.builddir, "tests", "chaos_client")
        hosts = ",".join(p.addr for p in self.proxies)
        for i in range(self.o.clients):
            out = open(self.client_log(i, "out"), "w")
            err = open(self.client_log(i, "err"), "w")
            cmd = [exe, "-s", hosts, "-r", self.o.root, "-l", self.o.locks, "-t", self.o.threads,
                   "-p", self.store.port, "-T", self.o.session_ms, "-i", i,
                   "-x", self.seed, "-u", self.o.think_us, "-W", self.o.wait_ms,
                   "-m", self.recipe, "-n", self.o.leases]
            cmd += ["-U"] if self.o.unlocked else []
            cmd += ["-a", CLIENT_AUTH, "-C"] if self.o.acl == "creator" else []
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

    def hostile(self):
        if not self.ens.healthy(90):
            log("ensemble not healthy after 90 s; injecting anyway")
        for k in range(self.o.locks):
            r = self.rogue.call("plant %d" % k)
            log("hostile: plant in l%d: %s" % (k, " ".join("%s=%s" % kv for kv in (r or {}).items())))
            with self.hmu:
                self.hfig["planted"] += num(r, "planted")
                self.hfig["noauth"] += num(r, "noauth")
                self.rogue_errors += num(r, "err") if r else 1
        self.sleep(1, 2)
        self.unplant()
        if self.o.unlocked:
            return  # token 0: no lock node to go after
        for _ in range(self.rng.randint(3, 5)):
            what = self.rng.choice(["rewrite", "delete", "recreate P", "recreate E", "delwaiter"])
            k = self.rng.randrange(self.o.locks)
            if what == "delwaiter":
                self.rogue_op(what, k, None)
            else:
                self.armed_op(what, k)
            self.sleep(0.2, 1)
            if what == "recreate E":
                # an ephemeral node of a live session holds the lock: let
                # the waiters meet it, then let them through
                self.unplant()
        self.sleep(0.5, 1.5)
        self.unplant()

    def unplant(self):
        # the rogue's ephemeral nodes are contenders that never leave
        self.rogue_removal("unplant")

    def rogue_removal(self, cmd):
        r = self.rogue.call(cmd)
        log("hostile: %s: %s" % (cmd, " ".join("%s=%s" % kv for kv in (r or {}).items())))
        with self.hmu:
            self.rogue_errors += 1 if r is None else num(r, "err")
            self.stolen += num(r, "stolen")

    def armed_op(self, what, k):
        """what to the next holder of lock k, inside its critical section."""
        done = threading.Event()

        def act(lock, token):
            try:
                self.rogue_op(what, lock, token)
            finally:
                done.set()

        self.store.arm_rogue(k, act)
        if done.wait(STALL_S):
            return
        if self.store.disarm_rogue():
            log("hostile: %s: nobody entered the critical section of l%d in %d s" % (what, k, STALL_S))
            with self.hmu:
                self.stalled += 1
        elif not done.wait(120):
            log("hostile: %s on l%d still running" % (what, k))

    def rogue_op(self, what, k, token):
        verb = what.split()[0]
        cmd = "%s %d" % (verb, k) if token is None else "%s %d %d%s" % (
            verb, k, token, what[len(verb):])
        r = self.rogue.call(cmd)
        t_done = time.monotonic()
        res = (r or {}).get("result", "none-answer")
        log("hostile: %s -> %s" % (cmd, " ".join("%s=%s" % kv for kv in (r or {}).items())))
        key = (k, num(r, "token"))
        with self.hmu:
            if res == "noauth":
                self.hfig["noauth"] += 1
            elif res in ("err", "none-answer"):
                self.rogue_errors += 1
            elif res == "ok" and verb == "rewrite":
                self.hfig["rewritten"] += 1
                self.rogue_rewritten.add(key)
            elif res in ("ok", "unsure"):
                # the holder waits for the store while we act: if its node
                # went, it went by our hand or with its session; either way
                # the hold is lost
                self.rogue_deleted[key] = t_done
                # in a read-write lock or a semaphore the tail of a queue
                # of two may hold: the victim may not have been waiting
                # and a multi-lock may be giving its waiting node up itself
                if verb == "delwaiter" and (res == "unsure" or
                                            self.recipe not in ("mutex", "async")):
                    self.rogue_unsure.add(key)
                self.hfig["recreated" if verb == "recreate" else "deleted"] += 1
                if verb == "recreate" and r.get("create") != "ok":
                    log("hostile: re-create of %s failed: %s" % (r.get("path"), r.get("create")))
                    self.rogue_errors += 1

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
            with open(self.client_log(i, "out")) as f:
                lines = [line for line in f if "cycles=" in line]
            with open(self.client_log(i, "err")) as f:
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
        r = self.rogue.call("count")
        if r is not None and num(r, "orphans") >= 0:
            self.rogue_left = num(r, "rogue")
            return num(r, "orphans")
        log("rogue could not count; counting contenders with tests/locker instead")
        exe = os.path.join(self.o.builddir, "tests", "locker")
        n = 0
        for k in range(self.o.locks):
            r = subprocess.run([exe, "list", "-s", ",".join(self.ens.servers()), "-r", self.o.root,
                                "-n", "l%d" % k], stdout=subprocess.PIPE, text=True, timeout=60)
            for line in r.stdout.splitlines():
                if line.startswith("contenders="):
                    n += int(line.split("=")[1])
        return n

    def hostile_checks(self, tot):
        """Failures of the rules the rogue tests; sets self.figures."""
        with self.store.mu:
            seen = set(self.store.seen)
            reported = dict(self.store.lost_reports)
            acquired = dict(self.store.acquired)
        deleted = self.rogue_deleted
        # a deleted node whose token reached the store was a hold (the
        # client only learns its token by acquiring); any other was waiting
        holds = [key for key in deleted if key in seen]
        told = [key for key in holds if key in reported]
        waiters = [key for key in deleted if key not in seen]
        sure_waiters = [key for key in waiters if key not in self.rogue_unsure]
        # an acquire that returned after the delete was confirmed: a bug
        # when the victim was surely waiting; when it may have held already
        # (rogue_unsure: the tail of a read-write lock's or a semaphore's
        # queue), its hold may have begun before the delete, on a listing
        # that showed its node, and what matters is that it was reported
        # LOST (it entered, so it is among `holds`, checked below)
        late = [key for key in deleted if key in acquired and acquired[key] > deleted[key]
                and key not in self.rogue_unsure]
        late_unsure = [key for key in deleted if key in acquired and
                       acquired[key] > deleted[key] and key in self.rogue_unsure]
        rewritten_told = [key for key in self.rogue_rewritten if key in reported]
        revoked = tot.get("revoked", 0)
        self.figures = {
            "deleted_holds_reported": "%d/%d" % (len(told), len(holds)),
            "rewritten_reported": "%d/%d" % (len(rewritten_told), len(self.rogue_rewritten)),
            "deleted_waiters": len(waiters),
        }
        bad = []
        for key in holds:
            if key not in reported:
                log("lock %d: hold with token %d lost its node to the rogue, never reported LOST" % key)
        if len(told) < len(holds):
            bad.append("%d hold(s) deleted by the rogue never reported LOST" % (len(holds) - len(told)))
        # the rogue rewrites a node only once its holder is inside
        untold = [key for key in self.rogue_rewritten if key in seen and key not in reported]
        for key in untold:
            log("lock %d: hold with token %d had its data rewritten, never reported LOST" % key)
        if untold:
            bad.append("%d rewritten hold(s) never reported LOST" % len(untold))
        for key in late:
            log("lock %d: acquire of token %d returned %.3f s after the rogue deleted its node"
                % (key[0], key[1], acquired[key] - deleted[key]))
        if late:
            bad.append("%d acquire(s) returned ZKL_OK after their node was deleted" % len(late))
        for key in late_unsure:
            log("lock %d: acquire of token %d returned %.3f s after the rogue deleted a node "
                "that may have held already; reported LOST: %s"
                % (key[0], key[1], acquired[key] - deleted[key], key in reported))
        if not len(sure_waiters) <= revoked <= len(waiters):
            bad.append("ZKL_EREVOKED %d times for %d waiting node(s) deleted" % (revoked, len(waiters)))
        if self.stalled:
            bad.append("%d lock(s) stalled (nobody held for %d s)" % (self.stalled, STALL_S))
        if self.rogue_left:
            bad.append("%d rogue node(s) left after its cleanup" % self.rogue_left)
        if self.rogue_errors:
            bad.append("the rogue failed %d time(s)" % self.rogue_errors)
        if self.o.acl == "creator":
            changed = sum(v for k, v in self.hfig.items() if k != "noauth")
            if changed:
                bad.append("the rogue changed %d node(s) despite the ACL" % changed)
            if self.faults.get("hostile") and not self.hfig["noauth"]:
                bad.append("the rogue never met ZNOAUTH")
            if set(self.kinds) <= {"hostile"} and (reported or tot.get("lost", 0)):
                bad.append("%d hold(s) lost under the ACL" % max(len(reported), tot.get("lost", 0)))
        return bad

    def run(self, number):
        self.store.reset(self.o.leases if self.recipe == "sem" else 0)
        self.start_clients()
        cli = None
        if self.recipe == "mixed" and self.o.cli > 0:
            cli = CliUsers(self.o, self.proxies, self.store, self.seed, self.work)
            cli.start(self.o.cli)
        t_start = time.monotonic()
        end = t_start + self.o.duration
        while True:
            if not self.bag:
                self.bag.extend(self.kinds)
                self.rng.shuffle(self.bag)
            self.sleep(1, 3)
            if time.monotonic() >= end:
                break
            self.inject(self.bag.pop())
        self.ens.healthy(90)
        cli_hung = cli.stop() if cli else 0
        hung, failed = self.stop_clients()
        secs = time.monotonic() - t_start
        tot = self.client_totals()
        if cli:
            tot["revoked"] = tot.get("revoked", 0) + cli.fig["revoked"]
            tot["written"] = tot.get("written", 0) + cli.fig["written"]
        self.rogue_removal("cleanup")
        # a node the rogue rewrote is no hold either: its holder is told
        # LOST and the node goes, so the next holder may begin at once
        ended = dict(self.rogue_deleted)
        ended.update((key, 0) for key in self.rogue_rewritten)
        overlaps, fenced, lost_updates, stale_ok, writes = self.store.check(self.pauses, ended)
        orphans = self.orphans()  # also counts what the rogue left
        bad = self.hostile_checks(tot)
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
        if cli:
            if cli.fig["violations"]:
                bad.append("%d zklock run(s) without their lock" % cli.fig["violations"])
            if cli.fig["errors"] or cli_hung:
                bad.append("zklock runs failed (%d) or hung (%d)" % (cli.fig["errors"], cli_hung))
            if not cli.fig["ran"]:
                bad.append("no zklock COMMAND ran")
            print("chaos: seed=%d round=%d zklock users: %s" % (
                self.seed, number, " ".join("%s=%d" % kv for kv in cli.fig.items())), flush=True)
        faults = ",".join("%s:%d" % (k, self.faults[k]) for k in self.kinds)
        hostile = ",".join("%s:%d" % (k, v) for k, v in self.hfig.items())
        print("chaos: seed=%d round=%d recipe=%s secs=%d clients=%d threads=%d locks=%d session_ms=%d acl=%s "
              "cycles=%d written=%d faults=%s paused_in_cs=%d overlaps=%d lost_updates=%d stale_rejected=%d "
              "stale_accepted=%d fenced=%d lost_holds=%d orphans=%d hung=%d failed=%d "
              "timeouts=%d errors=%d max_wait_ms=%d hostile=%s deleted_holds_reported=%s "
              "rewritten_reported=%s deleted_waiters=%d revoked=%d stalled=%d stolen=%d "
              "rogue_left=%d rogue_errors=%d result=%s"
              % (self.seed, number, self.recipe, secs, self.o.clients, self.o.threads, self.o.locks,
                 self.o.session_ms, self.o.acl, tot.get("cycles", 0), writes, faults, self.held_pauses, overlaps,
                 lost_updates, self.store.rejected, stale_ok, fenced, tot.get("lost", 0), orphans, hung, failed,
                 tot.get("timeouts", 0), tot.get("errors", 0), tot.get("max_wait_ms", 0), hostile,
                 self.figures["deleted_holds_reported"], self.figures["rewritten_reported"],
                 self.figures["deleted_waiters"], tot.get("revoked", 0), self.stalled, self.stolen,
                 self.rogue_left, self.rogue_errors, "FAIL(%s)" % "; ".join(bad) if bad else "PASS"), flush=True)
        if self.o.unlocked:
            # a semaphore's sections write nothing: only overlaps show
            caught = overlaps > 0 and (lost_updates > 0 or self.recipe == "sem")
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
    ap.add_argument("--recipe", default="mutex",
                    help="what the clients take, one per round in turn (a comma-separated "
                    "list): mutex; async, mutexes taken with zkl_mutex_lock_async and "
                    "released by another thread, one in eight cancelled; rw, read-write locks (3 reads to 1 write, half the writes "
                    "downgrade); sem, semaphores of --leases leases; multi, two locks a "
                    "cycle: nested in a fixed order, as one multi-lock, or one alone; "
                    "mixed, all of them and flat locks, and zklock(1) users (--cli)")
    ap.add_argument("--leases", type=int, default=2)
    ap.add_argument("--cli", type=int, default=2,
                    help="mixed rounds: threads running zklock(1) beside the clients")
    ap.add_argument("--zklock", default=None,
                    help="mixed rounds: the zklock(1) to run (default: the build's); "
                    "another one checks the checker")
    ap.add_argument("--unlocked", action="store_true",
                    help="clients skip the lock: the checks must fail")
    ap.add_argument("--faults", default=",".join(KINDS))
    ap.add_argument("--netns", choices=["auto", "yes", "no"], default="auto",
                    help="nodes in network namespaces (needed for partition)")
    ap.add_argument("--acl", choices=["open", "creator"], default="open",
                    help="creator: clients authenticate and use ZKL_ACL_CREATOR; the rogue "
                    "(another identity) must meet ZNOAUTH")
    o = ap.parse_args()
    o.builddir = os.path.abspath(o.builddir)
    o.recipes = [r for r in o.recipe.split(",") if r]
    for r in o.recipes:
        if r not in ("mutex", "async", "rw", "sem", "multi", "mixed"):
            ap.error("unknown recipe %r (known: mutex, async, rw, sem, multi, mixed)" % r)
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
    ens, proxies, ok, rounds, rogue = Ensemble(o.srcdir, netns), [], True, 0, None
    t0 = time.monotonic()
    try:
        ens.start()
        store = Store()
        store.serve()
        for i, server in enumerate(ens.servers()):
            proxies.append(Proxy(o.srcdir, server, os.path.join(work, "proxy%d" % i), seed + i))
        rogue = Rogue(os.path.join(o.builddir, "tests", "chaos_rogue"), ",".join(ens.servers()),
                      o.root, o.locks, ROGUE_AUTH if o.acl == "creator" else None,
                      os.path.join(work, "rogue.err"))
        log("rogue session 0x%s, straight to %s" % (rogue.session, ",".join(ens.servers())))
        bag = []
        while rounds < o.rounds or time.monotonic() - t0 + o.duration <= o.until:
            r = Round(o, ens, proxies, store, rogue, seed + rounds, kinds, work,
                      o.recipes[rounds % len(o.recipes)], bag)
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
        if rogue and rogue.stop() != 0:
            with open(os.path.join(work, "rogue.err")) as f:
                log("the rogue exited with %d:\n%s" % (rogue.proc.returncode, f.read()[-2000:]))
            ok = False
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
