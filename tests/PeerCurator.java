// PeerCurator.java: the Apache Curator side of tests/peers.itest, run as a
// single-file program (java -cp curator-recipes.jar PeerCurator.java ...).
//
//   PeerCurator HOSTS PATH DIR N PYTHON PEER
//
// N times: take Curator's InterProcessMutex on PATH, then run the critical
// section all peers share (PEER crit DIR TOKEN, tests/peer_kazoo.py) with
// the czxid of Curator's own lock node as the token. Exits 0, or 3 if the
// critical section reported a violation.
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;

public class PeerCurator {
  // getLockPath() is protected: the token needs our node's path.
  static class Mutex extends InterProcessMutex {
    Mutex(CuratorFramework client, String path) {
      super(client, path);
    }

    String node() {
      return getLockPath();
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println("usage: PeerCurator HOSTS PATH DIR N PYTHON PEER");
      System.exit(64);
    }
    int n = Integer.parseInt(args[3]), rc = 0;
    CuratorFramework client =
        CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new RetryOneTime(200));
    client.start();
    if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
      System.err.println("PeerCurator: cannot connect to " + args[0]);
      System.exit(69);
    }
    Mutex lock = new Mutex(client, args[1]);
    for (int i = 0; i < n; i++) {
      lock.acquire();
      try {
        long token = client.checkExists().forPath(lock.node()).getCzxid();
        Process crit =
            new ProcessBuilder(args[4], args[5], "crit", args[2], Long.toString(token))
                .inheritIO()
                .start();
        if (crit.waitFor() != 0)
          rc = 3;
      } finally {
        lock.release();
      }
    }
    client.close();
    System.exit(rc);
  }
}
