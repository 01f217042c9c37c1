package lockcheck.locks;

import com.datastax.oss.driver.api.core.CqlSession;
import java.time.Duration;

/**
 * A lock of the catalogue as the protocol sees it. Times are the JVM's monotonic milliseconds
 * ({@link #now}): a grant returns the instant its lease ends (counted from when its attempt was
 * sent, never from the reply, so that a slow reply shortens it), which the loop turns into the
 * reply's lease_ms.
 */
interface Lock {
  /** The outcome is unknown (a CAS time-out, a client time-out, a connection lost mid-request). */
  final class Unknown extends Exception {
    Unknown(String msg) {
      super(msg);
    }
  }

  /** The operation certainly did not take effect. */
  final class Failed extends Exception {
    Failed(String msg) {
      super(msg);
    }
  }

  /** Creates the lock's schema as its original does (idempotent). */
  void setup(CqlSession session, String keyspace, Duration ttl, long deadline);

  /** Whether the lock answers renew (setup's reply says so). */
  boolean renews();

  /** Blocks until granted or the deadline; returns when the lease ends. */
  long acquire(String name, String owner, long deadline) throws Unknown, Failed;

  /** Extends a held grant; returns when the new lease ends. */
  long renew(String name, String owner, long deadline) throws Unknown, Failed;

  void release(String name, String owner, long deadline) throws Unknown, Failed;

  static long now() {
    return System.nanoTime() / 1_000_000;
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(Math.max(0, ms));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
