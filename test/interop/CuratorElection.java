// A Curator election peer (LeaderSelector, LeaderLatch) for the election interop tests (run as a single-file program:
// java -cp CURATOR_JARS CuratorElection.java CONNECT PATH MODE DIR ID).
//   lead:  a LeaderSelector with id ID; in takeLeadership write DIR/leading (its id, and getLeader()'s id
//          as Curator sees it), wait for DIR/release, then return (which ends the term); then close.
//   query: write DIR/result: getLeader()'s id and isLeader, then every participant's id, one per line.
//   latch: a LeaderLatch with id ID: once it leads (await), write DIR/leading, wait for DIR/release, close.
//   latchquery: write DIR/result as query does, from a LeaderLatch (not started) on PATH.
//   handover: ID is a number of rounds. Two clients (two sessions) with a selector each; in each round
//          the leader's term ends, by returning from takeLeadership (a resignation) in even rounds and by
//          its session being ended on the server in odd ones (as zklock::testing::kill_session does: a
//          second client opens the session and closes it); writes DIR/result: one line per round, "resign
//          MS" or "kill MS", from the end of the term to the other selector's takeLeadership.
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.ZooKeeper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

public class CuratorElection {
    // Writes DIR/name whole or not at all: the test polls for the file and reads it at once.
    static void publish(Path dir, String name, String text) throws Exception {
        Path tmp = dir.resolve(name + ".tmp");
        Files.writeString(tmp, text);
        Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    }

    // A term: which selector leads, and the latch that ends its takeLeadership.
    record Term(int who, CountDownLatch end) {}

    static void handover(String connect, String path, Path dir, int rounds) throws Exception {
        CuratorFramework[] fs = new CuratorFramework[2];
        LinkedBlockingQueue<Term> terms = new LinkedBlockingQueue<>();
        LinkedBlockingQueue<Long> ledAt = new LinkedBlockingQueue<>();
        LeaderSelector[] sels = new LeaderSelector[2];
        for (int i = 0; i < 2; ++i) {
            // A short session timeout and retries enough to come back after its session was ended.
            fs[i] = CuratorFrameworkFactory.newClient(connect, 4000, 4000, new RetryNTimes(100, 50));
            fs[i].start();
            fs[i].blockUntilConnected();
            final int who = i;
            sels[i] = new LeaderSelector(fs[i], path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework client) throws Exception {
                    ledAt.put(System.nanoTime());
                    CountDownLatch end = new CountDownLatch(1);
                    terms.put(new Term(who, end));
                    end.await();
                }
            });
            sels[i].setId("selector-" + i);
            sels[i].autoRequeue();
        }
        for (LeaderSelector s : sels) s.start();
        StringBuilder out = new StringBuilder();
        Term t = terms.take();
        ledAt.take();
        for (int r = 0; r < rounds; ++r) {
            // Both selectors queue before the term ends (the other one's node exists).
            while (fs[0].getChildren().forPath(path).size() < 2) Thread.sleep(1);
            long ended = System.nanoTime();
            if (r % 2 == 0) t.end().countDown();
            else {
                ZooKeeper zk = fs[t.who()].getZookeeperClient().getZooKeeper();
                CountDownLatch in = new CountDownLatch(1);
                ZooKeeper killer = new ZooKeeper(connect, 4000, e -> {
                    if (e.getState() == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected) in.countDown();
                }, zk.getSessionId(), zk.getSessionPasswd());
                in.await(10, TimeUnit.SECONDS);
                killer.close();  // ends the session on the server: its node goes at once
            }
            Term next = terms.poll(60, TimeUnit.SECONDS);
            Long led = ledAt.poll(60, TimeUnit.SECONDS);
            if (next == null || led == null) throw new IllegalStateException("nobody led after round " + r);
            if (r % 2 == 1) t.end().countDown();  // the killed one's takeLeadership returns (it was interrupted or not)
            if (next.who() == t.who()) throw new IllegalStateException("the same selector led again in round " + r);
            out.append(r % 2 == 0 ? "resign " : "kill ").append((led - ended) / 1e6).append("\n");
            t = next;
        }
        t.end().countDown();
        for (LeaderSelector s : sels) s.close();
        for (CuratorFramework f : fs) f.close();
        publish(dir, "result", out.toString());
    }

    public static void main(String[] a) throws Exception {
        if (a[2].equals("handover")) {
            handover(a[0], a[1], Path.of(a[3]), Integer.parseInt(a[4]));
            return;
        }
        CuratorFramework f = CuratorFrameworkFactory.newClient(a[0], 30000, 15000, new RetryNTimes(3, 100));
        f.start();
        f.blockUntilConnected();
        Path dir = Path.of(a[3]);
        if (a[2].startsWith("latch")) {
            LeaderLatch latch = new LeaderLatch(f, a[1], a[4]);
            if (a[2].equals("latch")) {
                latch.start();
                latch.await();
                publish(dir, "leading", a[4]);
                while (!Files.exists(dir.resolve("release"))) Thread.sleep(10);
                latch.close();
            } else {
                Participant leader = latch.getLeader();
                StringBuilder out = new StringBuilder(leader.getId() + " " + leader.isLeader() + "\n");
                for (Participant p : latch.getParticipants()) out.append(p.getId()).append("\n");
                publish(dir, "result", out.toString());
            }
            f.close();
            return;
        }
        CountDownLatch done = new CountDownLatch(1);
        LeaderSelector sel = new LeaderSelector(f, a[1], new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework client) throws Exception {
                publish(dir, "leading", a[4]);
                while (!Files.exists(dir.resolve("release"))) Thread.sleep(10);
                done.countDown();
            }
        });
        sel.setId(a[4]);
        if (a[2].equals("lead")) {
            sel.start();
            done.await();
            sel.close();
        } else {
            Participant leader = sel.getLeader();
            StringBuilder out = new StringBuilder(leader.getId() + " " + leader.isLeader() + "\n");
            for (Participant p : sel.getParticipants()) out.append(p.getId()).append("\n");
            publish(dir, "result", out.toString());
        }
        f.close();
    }
}
