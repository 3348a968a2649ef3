// A Curator InterProcessReadWriteLock peer for the interop tests (run as a single-file program:
// java -cp CURATOR_JARS CuratorReadWrite.java CONNECT PATH MODE DIR).
//   read-hold, write-hold: acquire that side, create DIR/held, wait for DIR/release, release.
//   read-try, write-try:   try that side for 500 ms; write "acquired" or "busy" to DIR/result (and release).
//   downgrade-hold:        acquire the write side, then the read side, release the write side (Curator's
//                          downgrade), create DIR/held, wait for DIR/release, release the read side.
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;

public class CuratorReadWrite {
    // Writes DIR/name whole or not at all: the test polls for the file and reads it at once.
    static void publish(Path dir, String name, String text) throws Exception {
        Path tmp = dir.resolve(name + ".tmp");
        Files.writeString(tmp, text);
        Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    }

    // Until DIR/release exists; exits if the test that started us is gone (it can no longer release us).
    static void waitForRelease(Path dir) throws Exception {
        ProcessHandle test = ProcessHandle.current().parent().orElse(null);
        while (!Files.exists(dir.resolve("release"))) {
            if (test != null && !test.isAlive()) System.exit(3);
            Thread.sleep(10);
        }
    }

    // A failure exits at once with 1 (Curator's threads would otherwise keep the JVM alive).
    public static void main(String[] a) {
        try {
            run(a);
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
    }

    static void run(String[] a) throws Exception {
        String mode = a[2];
        Path dir = Path.of(a[3]);
        if (mode.equals("downgrade-hold")) {
            CuratorFramework f = CuratorFrameworkFactory.newClient(a[0], 30000, 15000, new RetryNTimes(3, 100));
            f.start();
            if (!f.blockUntilConnected(60, TimeUnit.SECONDS)) throw new IllegalStateException("cannot connect to " + a[0]);
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(f, a[1]);
            rw.writeLock().acquire();
            rw.readLock().acquire();
            rw.writeLock().release();
            publish(dir, "held", "held");
            waitForRelease(dir);
            rw.readLock().release();
            f.close();
            return;
        }
        String side = mode.startsWith("read-") ? "read" : mode.startsWith("write-") ? "write" : null;
        String what = side == null ? null : mode.substring(side.length() + 1);
        if (side == null || !(what.equals("hold") || what.equals("try")))
            throw new IllegalArgumentException("unknown mode " + mode);
        CuratorFramework f = CuratorFrameworkFactory.newClient(a[0], 30000, 15000, new RetryNTimes(3, 100));
        f.start();
        if (!f.blockUntilConnected(60, TimeUnit.SECONDS)) throw new IllegalStateException("cannot connect to " + a[0]);
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(f, a[1]);
        InterProcessMutex m = side.equals("read") ? rw.readLock() : rw.writeLock();
        if (what.equals("hold")) {
            m.acquire();
            publish(dir, "held", "held");
            waitForRelease(dir);
            m.release();
        } else {
            boolean got = m.acquire(500, TimeUnit.MILLISECONDS);
            publish(dir, "result", got ? "acquired" : "busy");
            if (got) m.release();
        }
        f.close();
    }
}
