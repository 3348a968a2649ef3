// A Curator InterProcessMutex peer for the interop tests (run as a single-file program:
// java -cp CURATOR_JARS CuratorLock.java CONNECT PATH MODE DIR).
//   hold:           acquire, create DIR/held, wait for DIR/release, release.
//   try:            try for 500 ms; write "acquired" or "busy" to DIR/result (and release).
//   hold-revocable: acquire with makeRevocable, write its lock node to DIR/held, release when DIR/release
//                   appears or a revocation request comes (then write DIR/revoked first).
//   revoke:         Revoker.attemptRevoke on the node named in DIR/node; write DIR/result "sent".
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;

public class CuratorLock {
    // Writes DIR/name whole or not at all: the test polls for the file and reads it at once.
    static void publish(Path dir, String name, String text) throws Exception {
        Path tmp = dir.resolve(name + ".tmp");
        Files.writeString(tmp, text);
        Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    }

    public static void main(String[] a) throws Exception {
        CuratorFramework f = CuratorFrameworkFactory.newClient(a[0], 30000, 15000, new RetryNTimes(3, 100));
        f.start();
        f.blockUntilConnected();
        InterProcessMutex m = new InterProcessMutex(f, a[1]);
        Path dir = Path.of(a[3]);
        if (a[2].equals("hold-revocable")) {
            java.util.concurrent.atomic.AtomicBoolean revoked = new java.util.concurrent.atomic.AtomicBoolean();
            m.makeRevocable(lock -> revoked.set(true));  // the listener runs elsewhere; the owner releases
            m.acquire();
            String node = null;
            for (String n : m.getParticipantNodes()) { node = n; break; }  // the first is the holder: us
            publish(dir, "held", node);
            while (!revoked.get() && !Files.exists(dir.resolve("release"))) Thread.sleep(10);
            if (revoked.get()) publish(dir, "revoked", "revoked");
            m.release();
        } else if (a[2].equals("revoke")) {
            Revoker.attemptRevoke(f, Files.readString(dir.resolve("node")).trim());
            publish(dir, "result", "sent");
        } else if (a[2].equals("hold")) {
            m.acquire();
            publish(dir, "held", "held");
            while (!Files.exists(dir.resolve("release"))) Thread.sleep(10);
            m.release();
        } else {
            boolean got = m.acquire(500, TimeUnit.MILLISECONDS);
            publish(dir, "result", got ? "acquired" : "busy");
            if (got) m.release();
        }
        f.close();
    }
}
