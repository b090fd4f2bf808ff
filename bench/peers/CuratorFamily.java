// SPDX-License-Identifier: Apache-2.0
// CuratorFamily.java: the read-heavy and semaphore workloads of zklock-bench
// for Apache Curator (InterProcessReadWriteLock, InterProcessSemaphoreV2),
// with the harness's flags and JSON lines. It runs beside the harness's own
// driver and takes its helpers (flags, mntr counters, JSON) from it:
//
//   java -cp ../shared/bench/curator/classes:$CURATOR_CP \
//       bench/peers/CuratorFamily.java -w read-heavy,semaphore -C 9 -M 2000 [--leases 2]
//
// read-heavy: C clients, each with its own session, on one lock; one in nine
// writes (-C 9: 8 readers and 1 writer). semaphore: C clients on one
// semaphore of --leases leases. M cycles in all; the samples are the waits.
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;

public class CuratorFamily {
  static int leases = 2;

  interface Cycle {
    void run(int id) throws Exception;
  }

  static void workload(CuratorFramework admin, String name, boolean sem) throws Exception {
    final String path = CuratorBench.runBase + "/" + name;
    final int clients = CuratorBench.clients, m = CuratorBench.m;
    final AtomicInteger tickets = new AtomicInteger(), readers = new AtomicInteger(),
        writers = new AtomicInteger(), peak = new AtomicInteger();
    final AtomicLong violations = new AtomicLong();
    final long[] counter = {0}, writes = {0};
    final long[][] waits = new long[clients][m];
    final int[] nw = new int[clients];
    final CuratorFramework[] cs = new CuratorFramework[clients];
    for (int i = 0; i < clients; i++) cs[i] = CuratorBench.newClient();
    admin.create().creatingParentsIfNeeded().forPath(path);
    final CountDownLatch go = new CountDownLatch(1);
    final Throwable[] err = {null};
    Thread[] ts = new Thread[clients];
    for (int i = 0; i < clients; i++) {
      final int id = i;
      final boolean write = !sem && id % 9 == 0;
      ts[i] = new Thread(() -> {
        try {
          InterProcessSemaphoreV2 s = sem ? new InterProcessSemaphoreV2(cs[id], path, leases) : null;
          InterProcessReadWriteLock rw = sem ? null : new InterProcessReadWriteLock(cs[id], path);
          InterProcessMutex lock = rw == null ? null : write ? rw.writeLock() : rw.readLock();
          go.await();
          while (tickets.getAndIncrement() < m) {
            long a = System.nanoTime();
            Lease l = null;
            if (sem) l = s.acquire();
            else lock.acquire();
            waits[id][nw[id]++] = System.nanoTime() - a;
            if (sem) {
              int now = readers.incrementAndGet();
              peak.accumulateAndGet(now, Math::max);
              if (now > leases) violations.incrementAndGet();
              readers.decrementAndGet();
              s.returnLease(l);
              continue;
            }
            if (write) {
              if (writers.getAndIncrement() != 0 || readers.get() != 0) violations.incrementAndGet();
              counter[0]++;
              writes[0]++;
              writers.decrementAndGet();
            } else {
              peak.accumulateAndGet(readers.incrementAndGet(), Math::max);
              if (writers.get() != 0) violations.incrementAndGet();
              readers.decrementAndGet();
            }
            lock.release();
          }
        } catch (Throwable e) {
          synchronized (err) {
            if (err[0] == null) err[0] = e;
          }
        }
      }, "contender-" + i);
      ts[i].start();
    }
    CuratorBench.Counters ctr = new CuratorBench.Counters();
    ctr.begin();
    long t0 = System.nanoTime();
    go.countDown();
    for (Thread t : ts) t.join();
    long el = System.nanoTime() - t0;
    Map<String, Object> r = CuratorBench.result(name);
    ctr.end(r, m);
    for (CuratorFramework c : cs) c.close();
    if (err[0] != null) throw new RuntimeException(name + " worker failed", err[0]);
    int total = 0;
    for (int x : nw) total += x;
    long[] all = new long[total];
    int o = 0;
    for (int i = 0; i < clients; i++) {
      System.arraycopy(waits[i], 0, all, o, nw[i]);
      o += nw[i];
    }
    Arrays.sort(all);
    r.put("ops", total);
    r.put("secs", CuratorBench.r6(el / 1e9));
    r.put("ops_per_s", CuratorBench.r1(total / (el / 1e9)));
    r.put("p50_us", CuratorBench.pctUs(all, 0.50));
    r.put("p99_us", CuratorBench.pctUs(all, 0.99));
    r.put("max_us", CuratorBench.pctUs(all, 1.0));
    r.put("clients", clients);
    if (sem) {
      r.put("leases", leases);
      r.put("peak_inside", peak.get());
    } else {
      r.put("writers", (clients + 8) / 9);
      r.put("writes", writes[0]);
      r.put("peak_readers", peak.get());
      r.put("counter_ok", counter[0] == writes[0]);
    }
    r.put("violations", violations.get());
    CuratorBench.reorder(r);
    CuratorBench.emit(r);
    CuratorBench.cleanup(admin, path);
  }

  public static void main(String[] args) throws Exception {
    List<String> rest = new ArrayList<>(), mine = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String f = args[i], v = null;
      int eq = f.indexOf('=');
      if (f.startsWith("--") && eq > 0) {
        v = f.substring(eq + 1);
        f = f.substring(0, eq);
      } else if (i + 1 < args.length && (f.equals("--leases") || f.equals("-w") || f.equals("--workloads"))) {
        v = args[++i];
      }
      if (f.equals("--leases")) leases = Integer.parseInt(v);
      else if (f.equals("-w") || f.equals("--workloads")) mine.addAll(Arrays.asList(v.split(",")));
      else rest.add(args[i]);
    }
    CuratorBench.parseArgs(rest.toArray(new String[0]));
    CuratorBench.implVersion += " (InterProcessReadWriteLock, InterProcessSemaphoreV2)";
    CuratorBench.runBase = CuratorBench.root + "/curator-family-" + ProcessHandle.current().pid()
        + "-" + Long.toHexString(System.nanoTime());
    CuratorFramework c = CuratorBench.newClient();
    int rc = 0;
    try {
      c.create().creatingParentsIfNeeded().forPath(CuratorBench.runBase);
      for (String w : mine) {
        try {
          if (w.equals("read-heavy")) workload(c, w, false);
          else if (w.equals("semaphore")) workload(c, w, true);
          else throw new IllegalArgumentException("unknown workload " + w);
        } catch (Exception e) {
          rc = 1;
          Map<String, Object> r = CuratorBench.result(w);
          r.put("error", e.toString());
          CuratorBench.emit(r);
          e.printStackTrace();
        }
      }
    } finally {
      CuratorBench.cleanup(c, CuratorBench.runBase);
      c.close();
    }
    System.exit(rc);
  }
}
