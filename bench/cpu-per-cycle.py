#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""cpu-per-cycle.py: where the CPU of any bench's timed spans goes.

usage: cpu-per-cycle.py [--servers HOSTS] [--server-pids PIDS] -- COMMAND [ARGS...]
       cpu-per-cycle.py --table FILE.jsonl [FILE.jsonl ...]

The first form runs COMMAND (a bench of ../shared/bench, or zklock-bench)
and copies its output, adding to every JSON line that has "ops" and "secs"
the CPU it cost per cycle and the servers its client was connected to. It
needs no change to the bench, so Curator, kazoo and Redis get the same
figures as zklock: run-peers.sh runs it through ZKB_EXTRA_IMPLS (compare.sh
does that).

  - The span of a line is [the moment the line came out - "secs", that
    moment]: a bench prints a workload's line as soon as its timed span
    ends, after at most a few 4lw requests and a listing.
  - Every 100 ms the wrapper reads utime+stime (/proc/PID/stat) of COMMAND's
    process tree and of each server, and interpolates them at both ends of
    the span. A tick is 10 ms: a span of a few seconds is exact to about 1%.
  - The client is COMMAND's whole process tree, minus any redis-server in
    it (redis/run.sh starts its own), which counts as a server.
  - Every 500 ms, and when the line comes, it lists the tree's established
    TCP connections to the servers. A server is "connected" when a
    connection to it was seen in two of those listings or more, the last
    of them inside the span or at its end: a bench's 4lw requests (mntr,
    srvr) last milliseconds and are never seen twice. A session made and
    closed inside a span shorter than a second may be missed.
  - The wrapper itself takes about 1% of a core (ZKB_CPU_SELF=1: it says
    how much on stderr when the command ends).

Keys added (per cycle: divided by "ops"):
  sampled_client_cpu_us_per_cycle, sampled_server_cpu_us_per_cycle (by
  host:port, as zklock-bench's server_cpu_us_per_cycle: {"cpu_us", "state",
  "pid"}), sampled_leader_cpu_us_per_cycle, sampled_followers_cpu_us_per_cycle,
  sampled_server_cpu_us_per_cycle_total, sampled_total_cpu_us_per_cycle;
  and, unless the line has them (zklock-bench's own, exact), connected_to
  ({host:port: connections}) and leader. connected_to and leader are moved
  to the front of the line, so that run-peers.sh's 160-character echo shows
  them.

The servers: --servers, else $ZKB_SERVERS, else $ZKB_CONNECT, else
$ZKB_DIR/connect. Their PIDs: --server-pids (or $ZKB_SERVER_PIDS) in the
same order, else the process of this machine listening on each port.
Their states (leader, follower) come from the 4lw mntr at the line's end;
when it shows more voting servers than were measured, the totals are null
(sampled_servers_unmeasured says how many are missing).

The second form prints, for each (impl, workload), the median over runs of
those figures and the servers each run was connected to ("*": the leader).
zklock's own figures (its exact span, getrusage) are shown beside its
sampled ones: the two should agree within the noise.
"""
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

HZ = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.1
CONN_EVERY = 5  # samples: the connections and the tree every 500 ms


def proc_ticks(pid, children=False):
    """utime+stime of a process (all its threads); with children, also the
    reaped children's; None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2:].split()
    t = int(fields[11]) + int(fields[12])
    if children:
        t += int(fields[13]) + int(fields[14])
    return t


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def tree(root):
    """root and its descendants, alive now"""
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def hex_addr(h):
    """/proc/net/tcp's address: bytes as stored, IPv4-mapped IPv6 as IPv4"""
    words = [int(h[i:i + 8], 16).to_bytes(4, sys.byteorder) for i in range(0, len(h), 8)]
    b = b"".join(words)
    if len(b) == 16 and b[:12] == b"\0" * 10 + b"\xff\xff":
        b = b[12:]
    return b


def tcp_sockets(state, ports):
    """(local addr, local port, remote addr, remote port, inode) of the
    sockets in state (0x0A listening, 0x01 established) whose local
    (listening) or remote (established) port is in ports"""
    out, st = [], "%02X" % state
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    v = line.split()
                    if v[3] != st:
                        continue
                    la, lp = v[1].split(":")
                    ra, rp = v[2].split(":")
                    if int(lp if state == 0x0A else rp, 16) in ports:
                        out.append((hex_addr(la), int(lp, 16), hex_addr(ra), int(rp, 16), int(v[9])))
        except OSError:
            pass
    return out


def sockets_of(pids):
    """{inode: pid} of the sockets among the open files of pids"""
    out = {}
    for p in pids:
        d = "/proc/%d/fd" % p
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            try:
                to = os.readlink(d + "/" + n)
            except OSError:
                continue
            if to.startswith("socket:["):
                out[int(to[8:-1])] = p
    return out


class Server:
    def __init__(self, hp):
        self.hp = hp
        host, _, port = hp.rpartition(":")
        self.port = int(port)
        self.addrs = set()
        for fam, _, _, _, sa in socket.getaddrinfo(host, self.port, type=socket.SOCK_STREAM):
            b = socket.inet_pton(fam, sa[0])
            if len(b) == 16 and b[:12] == b"\0" * 10 + b"\xff\xff":
                b = b[12:]
            self.addrs.add(b)
        self.pid = 0
        self.state = "unknown"
        self.quorum = 0

    def mntr(self):
        """its state (leader, follower, standalone) and the voting servers"""
        self.state = "unknown"
        try:
            with socket.create_connection((self.hp.rpartition(":")[0], self.port), timeout=2) as s:
                s.sendall(b"mntr")
                data = b""
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    data += b
        except OSError:
            return
        for line in data.decode(errors="replace").splitlines():
            k, _, v = line.partition("\t")
            if k == "zk_server_state":
                self.state = v.strip()
            elif k == "zk_quorum_size":
                self.quorum = int(v)


def servers_from(args_servers, args_pids):
    hosts = args_servers or os.environ.get("ZKB_SERVERS") or os.environ.get("ZKB_CONNECT")
    if not hosts:
        try:
            with open(os.path.join(os.environ.get("ZKB_DIR") or "/tmp/zkb", "connect")) as f:
                hosts = f.read().strip()
        except OSError:
            hosts = ""
    srv = [Server(hp) for hp in hosts.split("/")[0].split(",") if hp]
    pids = args_pids or os.environ.get("ZKB_SERVER_PIDS") or ""
    if pids:
        pl = [int(p) for p in pids.split(",")]
        if len(pl) != len(srv):
            sys.exit("cpu-per-cycle.py: %d server PIDs for %d servers" % (len(pl), len(srv)))
        for s, p in zip(srv, pl):
            s.pid = p
        return srv
    listen = {}
    for la, lp, _, _, inode in tcp_sockets(0x0A, {s.port for s in srv}):
        for s in srv:
            if lp == s.port and (la in s.addrs or not any(la)):
                listen[inode] = s
    if listen:
        for inode, pid in sockets_of(int(p) for p in os.listdir("/proc") if p.isdigit()).items():
            if inode in listen:
                listen[inode].pid = pid
    for s in srv:
        if not s.pid:
            sys.stderr.write("cpu-per-cycle.py: no process found listening on %s: "
                             "its CPU is not measured\n" % s.hp)
    return srv


class Sampler(threading.Thread):
    """(time, client ticks, {name: server ticks}) every SAMPLE_S, and the
    connections to the servers every CONN_EVERY samples"""

    def __init__(self, root, srv):
        super().__init__(daemon=True)
        self.root, self.srv = root, srv
        self.samples = []
        self.conns = {}  # (inode, hp) -> [first seen, last seen, listings]
        self.redis = {}  # pid of a redis-server in the tree -> last ticks
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def sample(self, pids=None):
        pids = pids or tree(self.root)
        client, servers = 0, {}
        for p in pids:
            if comm(p) == "redis-server":
                t = proc_ticks(p)
                if t is not None:
                    self.redis[p] = t
                continue
            t = proc_ticks(p, children=True)
            client += t or 0
        for s in self.srv:
            servers[s.hp] = proc_ticks(s.pid) if s.pid else None
        for p, t in self.redis.items():
            servers["redis-server pid %d" % p] = t
        return time.monotonic(), client, servers, pids

    def connections(self, pids):
        seen = set()
        conns = tcp_sockets(0x01, {s.port for s in self.srv})
        mine = sockets_of(pids) if conns else {}
        for _, _, ra, rp, inode in conns:
            if inode in mine:
                for s in self.srv:
                    if rp == s.port and ra in s.addrs:
                        seen.add((inode, s.hp))
        return seen

    def note(self, t, conn):
        with self.lock:
            for k in conn:
                v = self.conns.setdefault(k, [t, t, 0])
                v[1], v[2] = t, v[2] + 1

    def run(self):
        n, pids = 0, None
        while not self.stop.is_set():
            # the process tree, listed again with the connections
            t, c, s, pids = self.sample(None if n % CONN_EVERY == 0 else pids)
            with self.lock:
                self.samples.append((t, c, s))
            if n % CONN_EVERY == 0:
                self.note(t, self.connections(pids))
            n += 1
            self.stop.wait(SAMPLE_S)

    def at(self, t, get):
        """get(sample) interpolated at time t (None if unknown)"""
        with self.lock:
            ss = sorted(self.samples, key=lambda x: x[0])
        before = [x for x in ss if x[0] <= t]
        after = [x for x in ss if x[0] >= t]
        if not before or not after:
            return None
        a, b = before[-1], after[0]
        va, vb = get(a), get(b)
        if va is None or vb is None:
            return None
        if b[0] == a[0]:
            return va
        return va + (vb - va) * (t - a[0]) / (b[0] - a[0])

    def connected(self, t0, t1, pids):
        """{server: connections} alive in [t0, t1]: seen in two listings or
        more (one made now), and seen since t0"""
        self.note(t1, self.connections(pids))
        out = {}
        with self.lock:
            for (_, hp), (first, last, n) in self.conns.items():
                if n >= 2 and first <= t1 and last >= t0:
                    out[hp] = out.get(hp, 0) + 1
        return out


def annotate(r, smp, srv):
    """r: a bench's JSON line, just printed; adds the sampled keys"""
    ops, secs = r.get("ops"), r.get("secs")
    if not isinstance(ops, (int, float)) or not isinstance(secs, (int, float)) or ops <= 0 or secs <= 0:
        return r
    t1, c1, s1, pids = smp.sample()
    with smp.lock:
        smp.samples.append((t1, c1, s1))
    t0 = t1 - secs
    c0 = smp.at(t0, lambda x: x[1])
    per = 1e6 / HZ / ops
    for s in srv:
        s.mntr()
    unmeasured = max([0] + [s.quorum for s in srv]) - len(srv)
    out = {}
    client = None if c0 is None else (c1 - c0) * per
    if client is not None:
        out["sampled_client_cpu_us_per_cycle"] = round(client, 3)
    obj, total, lead, others, miss = {}, 0.0, None, 0.0, False
    for name in s1:
        v0 = smp.at(t0, lambda x, n=name: x[2].get(n))
        v = None if v0 is None or s1[name] is None else (s1[name] - v0) * per
        s = next((x for x in srv if x.hp == name), None)
        state = s.state if s else "redis"
        obj[name] = {"cpu_us": None if v is None else round(v, 3), "state": state,
                     "pid": s.pid if s else int(name.split()[-1])}
        if v is None:
            miss = True
            continue
        total += v
        if state in ("leader", "standalone"):
            lead = v
        elif state != "redis":
            others += v
    out["sampled_server_cpu_us_per_cycle"] = obj
    if lead is not None:
        out["sampled_leader_cpu_us_per_cycle"] = round(lead, 3)
    if lead is not None and not miss and unmeasured <= 0:
        out["sampled_followers_cpu_us_per_cycle"] = round(others, 3)
    if unmeasured > 0:  # the totals would leave them out
        out["sampled_servers_unmeasured"] = unmeasured
    ok = bool(obj) and not miss and unmeasured <= 0
    out["sampled_server_cpu_us_per_cycle_total"] = round(total, 3) if ok else None
    out["sampled_total_cpu_us_per_cycle"] = (round(client + total, 3)
                                             if ok and client is not None else None)
    front = {k: r[k] for k in ("impl", "workload") if k in r}
    if "connected_to" in r:
        front["connected_to"] = r["connected_to"]
    else:
        front["connected_to"] = smp.connected(t0, t1, pids)
    leader = [s.hp for s in srv if s.state in ("leader", "standalone")]
    if "leader" in r or leader:
        front["leader"] = r.get("leader", leader[0] if leader else None)
    front.update((k, v) for k, v in r.items() if k not in front)
    front.update(out)
    return front


def run(argv):
    servers = pids = None
    while argv and argv[0] != "--":
        if argv[0] == "--servers":
            servers, argv = argv[1], argv[2:]
        elif argv[0] == "--server-pids":
            pids, argv = argv[1], argv[2:]
        else:
            sys.exit(__doc__)
    if len(argv) < 2:
        sys.exit(__doc__)
    srv = servers_from(servers, pids)
    try:
        child = subprocess.Popen(argv[1:], stdout=subprocess.PIPE, text=True)
    except OSError as e:
        sys.stderr.write("cpu-per-cycle.py: %s: %s\n" % (argv[1], e))
        return 127

    def forward(signum, _frame):
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    smp = Sampler(child.pid, srv)
    smp.start()
    for line in child.stdout:
        s = line.strip()
        if s.startswith("{"):
            try:
                line = json.dumps(annotate(json.loads(s), smp, srv)) + "\n"
            except (ValueError, OSError) as e:
                sys.stderr.write("cpu-per-cycle.py: line left as it was: %s\n" % e)
        sys.stdout.write(line)
        sys.stdout.flush()
    smp.stop.set()
    rc = child.wait()
    if os.environ.get("ZKB_CPU_SELF"):
        t = os.times()
        sys.stderr.write("cpu-per-cycle.py: own CPU %.3f s\n" % (t.user + t.system))
    return 128 - rc if rc < 0 else rc


def table(files):
    groups = {}
    for f in files:
        with open(f) as fh:
            for line in fh:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if isinstance(r, dict) and "error" not in r and "ops" in r:
                    groups.setdefault((r.get("workload"), r.get("impl")), []).append(r)

    def med(rs, k):
        xs = [r.get(k) for r in rs]
        xs = [x for x in xs if isinstance(x, (int, float)) and not isinstance(x, bool)]
        return "{:.1f}".format(statistics.median(xs)) if xs else "-"

    cols = ["workload", "impl", "runs", "connected to (* leader)", "client", "leader",
            "followers", "servers", "total", "ctxsw", "ops/txn"]
    print("CPU per cycle, microseconds, medians (sampled by cpu-per-cycle.py; "
          "zklock's own span in the row below its own)")
    print(" | ".join(cols))
    for (wl, impl), rs in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        conn = []
        for r in rs:
            c = r.get("connected_to") or {}
            conn.append("+".join(hp + ("*" if hp == r.get("leader") else "")
                                 for hp in sorted(c)) or "?")
        rows = [("sampled_", impl)]
        if any("client_cpu_us_per_cycle" in r for r in rs):
            rows.append(("", impl + " (own span)"))
        for pre, name in rows:
            print(" | ".join([str(wl), name, str(len(rs)), ",".join(conn),
                              med(rs, pre + "client_cpu_us_per_cycle"),
                              med(rs, pre + "leader_cpu_us_per_cycle"),
                              med(rs, pre + "followers_cpu_us_per_cycle"),
                              med(rs, pre + "server_cpu_us_per_cycle_total"),
                              med(rs, pre + "total_cpu_us_per_cycle"),
                              med(rs, "ctxsw_per_cycle") if not pre else "-",
                              med(rs, "ops_per_txn") if not pre else "-"]))
    return 0


def main(argv):
    if argv and argv[0] == "--table":
        return table(argv[1:])
    return run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
