package lockcheck.locks;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverTimeoutException;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
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

  /**
   * Prepares a lock's statement during setup, retrying the driver's request time-out (2 s, which
   * a prepare takes whatever the statement says) until the setup's deadline: on a loaded test
   * cluster a prepare right after CREATE TABLE can outlast it, and a prepare changes no data, so
   * a retry is safe. The locks' own requests keep the driver's defaults.
   */
  static PreparedStatement prepare(CqlSession session, long deadline, SimpleStatement statement) {
    while (true) {
      try {
        return session.prepare(statement);
      } catch (DriverTimeoutException e) {
        if (now() + 2000 > deadline) throw e;
      }
    }
  }

  static PreparedStatement prepare(CqlSession session, long deadline, String query) {
    return prepare(session, deadline, SimpleStatement.newInstance(query));
  }

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
