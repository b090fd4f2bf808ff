// SPDX-License-Identifier: Apache-2.0
// PeerCurator.java: the Apache Curator side of tests/peers.itest, run as a
// single-file program (java -cp curator-recipes.jar PeerCurator.java ...).
//
//   PeerCurator HOSTS PATH DIR N PYTHON PEER [read|write|multi=PATH2]
//
// N times: take Curator's InterProcessMutex on PATH (or the read or write
// side of its InterProcessReadWriteLock, or an InterProcessMultiLock of
// PATH and PATH2, which takes PATH and then PATH2 one after the other:
// the token is then its node's in PATH), then run the critical section
// all peers share (PEER crit DIR TOKEN, or PEER rwcrit DIR TOKEN MODE:
// tests/peer_kazoo.py) with the czxid of Curator's own lock node as the
// token. Exits 0, or 3 if the critical section reported a violation.
import java.lang.reflect.Method;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import java.util.Arrays;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;

public class PeerCurator {
  // getLockPath() is protected (public only from Curator 5.5): the token
  // needs our node's path.
  static String node(InterProcessMutex lock) throws Exception {
    Method m = InterProcessMutex.class.getDeclaredMethod("getLockPath");
    m.setAccessible(true);
    return (String) m.invoke(lock);
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 6 && !(args.length == 7 && args[6].matches("read|write|multi=/.+"))) {
      System.err.println("usage: PeerCurator HOSTS PATH DIR N PYTHON PEER [read|write|multi=PATH2]");
      System.exit(64);
    }
    String mode = args.length == 7 ? args[6] : null;
    String second = mode != null && mode.startsWith("multi=") ? mode.substring(6) : null;
    if (second != null)
      mode = null; // the critical section is a plain one
    int n = Integer.parseInt(args[3]), rc = 0;
    CuratorFramework client =
        CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new RetryOneTime(200));
    client.start();
    if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
      System.err.println("PeerCurator: cannot connect to " + args[0]);
      System.exit(69);
    }
    InterProcessMutex lock;
    if (mode == null)
      lock = new InterProcessMutex(client, args[1]);
    else {
      InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, args[1]);
      lock = mode.equals("read") ? rw.readLock() : rw.writeLock();
    }
    InterProcessLock held = lock;
    if (second != null)
      held = new InterProcessMultiLock(
          Arrays.<InterProcessLock>asList(lock, new InterProcessMutex(client, second)));
    for (int i = 0; i < n; i++) {
      held.acquire();
      try {
        String token =
            Long.toString(client.checkExists().forPath(node(lock)).getCzxid());
        ProcessBuilder pb =
            mode == null
                ? new ProcessBuilder(args[4], args[5], "crit", args[2], token)
                : new ProcessBuilder(args[4], args[5], "rwcrit", args[2], token, mode);
        Process crit = pb.inheritIO().start();
        if (crit.waitFor() != 0)
          rc = 3;
      } finally {
        held.release();
      }
    }
    client.close();
    System.exit(rc);
  }
}
