// A Curator InterProcessSemaphoreV2 peer for the interop tests (run as a single-file program:
// java -cp CURATOR_JARS CuratorSemaphore.java CONNECT PATH MAXLEASES hold|try DIR).
//   hold: acquire one lease, create DIR/held, wait for DIR/release, return the lease.
//   try:  try for one lease for 500 ms; write "acquired" or "busy" to DIR/result (and return it).
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;

public class CuratorSemaphore {
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
        int maxLeases = Integer.parseInt(a[2]);
        String mode = a[3];
        Path dir = Path.of(a[4]);
        if (!mode.equals("hold") && !mode.equals("try")) throw new IllegalArgumentException("unknown mode " + mode);
        CuratorFramework f = CuratorFrameworkFactory.newClient(a[0], 30000, 15000, new RetryNTimes(3, 100));
        f.start();
        if (!f.blockUntilConnected(60, TimeUnit.SECONDS)) throw new IllegalStateException("cannot connect to " + a[0]);
        InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(f, a[1], maxLeases);
        if (mode.equals("hold")) {
            Lease lease = sem.acquire();
            publish(dir, "held", "held");
            waitForRelease(dir);
            sem.returnLease(lease);
        } else {
            Lease lease = sem.acquire(500, TimeUnit.MILLISECONDS);
            publish(dir, "result", lease != null ? "acquired" : "busy");
            if (lease != null) sem.returnLease(lease);
        }
        f.close();
    }
}
