package lockcheck.locks;

import com.datastax.oss.driver.api.core.CqlSession;
import java.time.Duration;

final class AstyanaxRowLock implements Lock {
  public void setup(CqlSession session, String keyspace, Duration ttl, long deadline) { throw new UnsupportedOperationException("todo"); }
  public boolean renews() { return false; }
  public long acquire(String name, String owner, long deadline) throws Unknown, Failed { throw new Failed("todo"); }
  public long renew(String name, String owner, long deadline) throws Unknown, Failed { throw new Failed("todo"); }
  public void release(String name, String owner, long deadline) throws Unknown, Failed { throw new Failed("todo"); }
}
