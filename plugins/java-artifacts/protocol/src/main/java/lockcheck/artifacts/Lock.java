package lockcheck.artifacts;

/**
 * A tool's lock as the protocol sees it (docs/plugin.md). Times are the JVM's monotonic
 * milliseconds ({@link #now}). A grant returns the instant its lease ends, counted from when its
 * attempt was sent, or {@link #NO_LEASE} when the tool gives the application no lease to count:
 * a migration tool's lock is held until the migration ends, whatever a TTL in its table says.
 */
public interface Lock {
  /** The grant carries no lease: the reply has no lease_ms. */
  long NO_LEASE = Long.MIN_VALUE;

  /** The outcome is unknown (a time-out, a connection lost mid-request). */
  final class Unknown extends Exception {
    public Unknown(String msg) {
      super(msg);
    }
  }

  /** The operation certainly did not take effect. */
  final class Failed extends Exception {
    public Failed(String msg) {
      super(msg);
    }
  }

  /** Connects and creates the tool's schema as the tool does (idempotent). */
  void setup(Env env, long deadline) throws Exception;

  /** Blocks until granted or the deadline; returns when the lease ends, or NO_LEASE. */
  long acquire(String name, String owner, long deadline) throws Unknown, Failed;

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
