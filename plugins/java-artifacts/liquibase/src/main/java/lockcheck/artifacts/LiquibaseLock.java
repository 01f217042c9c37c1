package lockcheck.artifacts;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Liquibase's Cassandra lock service re-expressed: liquibase-cassandra's LockServiceCassandra
 * (github.com/liquibase/liquibase-cassandra at 3dc5b2eca3dd1b7c8f505adf31b1fc4ac1c9d1cf,
 * src/main/java/liquibase/ext/cassandra/lockservice/LockServiceCassandra.java, with the statements
 * of sqlgenerator/LockDatabaseChangeLogGeneratorCassandra.java,
 * UnlockDatabaseChangeLogGeneratorCassandra.java, CreateDatabaseChangeLogLockTableGeneratorCassandra
 * .java and InitializeDatabaseChangeLogLockTableGeneratorCassandra.java), whose artifact is not
 * served here. The statements go as Liquibase's JDBC executor sends them: through the JDBC wrapper
 * liquibase-cassandra's pom names (com.ing.data:cassandra-jdbc-wrapper 4.16.3), in its Liquibase
 * compliance mode, at the wrapper's default consistency (LOCAL_ONE; serial SERIAL), where an
 * update's count is always -1. The code is written here.
 *
 * <p>acquireLock, once per attempt: a read that the lock table exists ({@code SELECT ID FROM t});
 * once per process, the table's initialisation check ({@code SELECT COUNT(*)}) and, when it finds
 * no row, the row's initialisation; {@code isLocked}, a count of rows {@code LOCKED = TRUE AND
 * LOCKEDBY = '<host> (<address>)' ALLOW FILTERING}, which answers "not acquired" when this host
 * already holds it; the take, {@code UPDATE t SET LOCKED = TRUE, LOCKEDBY = '<host> (<address>)',
 * LOCKGRANTED = <client millis> WHERE ID = 1 IF LOCKED = FALSE}, whose [applied] it never reads
 * (the wrapper answers -1); and the grant decided by the same LOCAL_ONE count read again. Liquibase
 * polls acquireLock every 10 s (changeLogLockRecheckTime) for up to 5 minutes. releaseLock: the
 * existence read, then {@code UPDATE t SET LOCKED = FALSE, LOCKEDBY = NULL WHERE ID = 1}, no
 * condition. No TTL.
 *
 * <p>Where it differs, for lockcheck's several lock names in one keyspace: Liquibase has one lock
 * per keyspace, the row ID = 1 of DATABASECHANGELOGLOCK; here each lock name is a row of that
 * table with an ID of its own, the counts carry {@code ID = <id> AND}, and a lock's initialisation
 * inserts its row ({@code INSERT ... (ID, LOCKED) VALUES (<id>, FALSE)}) without Liquibase's
 * TRUNCATE, which would wipe the other names' rows.
 *
 * <p>One read is the harness's, not Liquibase's: when acquireLock returns false after its take
 * was sent (its LOCAL_ONE read-back found no row of its own), a SERIAL read of the row tells
 * whether the take applied all the same (the take's commit is at LOCAL_ONE too, so the read-back
 * can run before the commit reached its replica). Then the answer is info, not fail: Liquibase
 * goes on as not granted, while the row names this host, so its own acquireLock refuses the lock
 * from then on (isLocked: "held by this instance") and no one releases it.
 */
final class LiquibaseLock implements Lock {
  /** changeLogLockRecheckTime's default: the wait between two acquireLock calls. */
  static final long RECHECK_MS = 10_000;

  private Connection conn;
  private String table;
  private String lockedBy;
  /** isDatabaseChangeLogLockTableInitialized's cache, per lock row. */
  private final Set<Integer> initialised = new HashSet<>();
  /** hasChangeLogLock, per lock row. */
  private final Set<Integer> held = new HashSet<>();

  public static void main(String[] args) throws Exception {
    Protocol.serve(new LiquibaseLock());
  }

  @Override
  public void setup(Env env, long deadline) throws Exception {
    String hosts =
        env.contacts().stream().map(a -> a.getHostString() + ":" + a.getPort()).collect(Collectors.joining("--"));
    String url = "jdbc:cassandra://" + hosts + "/" + env.keyspace() + "?compliancemode=Liquibase";
    if (env.dc() != null) url += "&localdatacenter=" + env.dc();
    conn = DriverManager.getConnection(url);
    table = env.keyspace() + ".DATABASECHANGELOGLOCK";
    // LockDatabaseChangeLogGenerator's host description: NetUtil's host name and address.
    lockedBy = hostName() + " (" + hostAddress() + ")";
    System.err.println("liquibase: this process's LOCKEDBY is " + lockedBy);
    // StandardLockService.init: the table, when SELECT ID FROM it fails.
    if (!tableExists()) createTable();
  }

  /**
   * CreateDatabaseChangeLogLockTableGeneratorCassandra's statement, with a time-out long enough
   * for a loaded test cluster's schema change (the wrapper's default is the driver's 2 s).
   */
  private void createTable() throws SQLException {
    try (Statement s = conn.createStatement()) {
      s.setQueryTimeout(30);
      s.execute(
        "CREATE TABLE IF NOT EXISTS "
            + table
            + " (ID INT, LOCKED BOOLEAN, LOCKGRANTED timestamp, LOCKEDBY TEXT, PRIMARY KEY (ID))");
    }
  }

  /** A stable row ID per lock name (Liquibase's is 1: one lock per keyspace). */
  static int id(String name) {
    return Math.floorMod(name.hashCode(), 1 << 30) + 1;
  }

  @Override
  public long acquire(String name, String owner, long deadline) throws Unknown, Failed {
    int id = id(name);
    if (held.contains(id)) return NO_LEASE; // acquireLock: if (hasChangeLogLock) return true
    while (true) {
      if (acquireLock(id)) {
        held.add(id);
        return NO_LEASE;
      }
      // waitForLock: sleep changeLogLockRecheckTime, then try again, until its wait runs out. An
      // acquire shorter than the wait sleeps to its end, as Liquibase would still be asleep.
      long left = deadline - Lock.now() - 500;
      if (left < RECHECK_MS) {
        Lock.sleep(left);
        throw new Failed("not acquired before the deadline (Liquibase polls every 10 s)");
      }
      Lock.sleep(RECHECK_MS);
    }
  }

  /** LockServiceCassandra.acquireLock, for one lock row. */
  private boolean acquireLock(int id) throws Unknown, Failed {
    try {
      init(id);
      if (isLockedByCurrentInstance(id)) return false;
    } catch (SQLException e) {
      // Only reads and the row's first write have run: the lock is untouched.
      throw new Failed("acquireLock before the take: " + e);
    }
    try {
      int rowsUpdated =
          update(
              "UPDATE "
                  + table
                  + " SET LOCKED = TRUE, LOCKEDBY = '"
                  + lockedBy
                  + "', LOCKGRANTED = "
                  + System.currentTimeMillis()
                  + " WHERE ID = "
                  + id
                  + " IF LOCKED = FALSE");
      if (rowsUpdated == -1 && !isLockedByCurrentInstance(id)) {
        // "another node was faster": Liquibase goes on as not granted. Its read-back is at
        // LOCAL_ONE, and so is the take's commit: it can miss a take that applied. The harness,
        // not Liquibase, looks once more at SERIAL to answer truthfully (docs/plugin.md: fail is
        // "certainly did not take effect"); the read only finishes a commit already made.
        if (takenBySerialRead(id)) {
          throw new Unknown(
              "Liquibase answers not acquired (its LOCAL_ONE read-back found no row of its own), yet its take "
                  + "applied: a SERIAL read finds LOCKED = TRUE, LOCKEDBY = '"
                  + lockedBy
                  + "'; this host's acquireLock now refuses the lock as its own, and nobody releases it");
        }
        return false;
      }
      if (rowsUpdated > 1) throw new Unknown("Did not update change log lock correctly");
      if (rowsUpdated == 0) return false;
      return true;
    } catch (SQLException e) {
      // LockException: Liquibase stops; the take may have applied.
      throw new Unknown("acquireLock: " + e);
    }
  }

  /**
   * Not Liquibase's: whether the lock row names this host, read at SERIAL (a Paxos read sees
   * every applied take). A read that fails leaves the answer Liquibase's.
   */
  private boolean takenBySerialRead(int id) throws Unknown {
    try (Statement s = conn.createStatement()) {
      if (s instanceof com.ing.data.cassandra.jdbc.CassandraStatement cs) {
        cs.setConsistencyLevel(com.datastax.oss.driver.api.core.DefaultConsistencyLevel.SERIAL);
      }
      try (ResultSet rs = s.executeQuery("SELECT LOCKED, LOCKEDBY FROM " + table + " WHERE ID = " + id)) {
        return rs.next() && rs.getBoolean(1) && lockedBy.equals(rs.getString(2));
      }
    } catch (SQLException e) {
      // Liquibase's own answer stands, but it may be wrong: say unknown rather than fail.
      throw new Unknown("Liquibase answers not acquired; the SERIAL read that would tell whether its take applied failed: " + e);
    }
  }

  /** StandardLockService.init with LockServiceCassandra's checks, for one lock row. */
  private void init(int id) throws SQLException {
    // hasDatabaseChangeLogLockTable(true): any failure of SELECT ID FROM t reads as no table.
    if (!tableExists()) createTable();
    if (initialised.contains(id)) return;
    if (count("SELECT COUNT(*) FROM " + table + " WHERE ID = " + id) == 0) {
      // InitializeDatabaseChangeLogLockTableGeneratorCassandra: TRUNCATE, then this INSERT.
      exec("INSERT INTO " + table + " (ID, LOCKED) VALUES (" + id + ", FALSE)");
    }
    initialised.add(id);
  }

  private boolean isLockedByCurrentInstance(int id) throws SQLException {
    return count(
            "SELECT COUNT(*) FROM "
                + table
                + " WHERE ID = "
                + id
                + " AND LOCKED = TRUE AND LOCKEDBY = '"
                + lockedBy
                + "' ALLOW FILTERING")
        > 0;
  }

  @Override
  public void release(String name, String owner, long deadline) throws Unknown, Failed {
    int id = id(name);
    if (!held.contains(id)) throw new Failed("not held");
    // releaseLock's finally: hasChangeLogLock = false, whatever happened.
    held.remove(id);
    if (!tableExists()) {
      // Liquibase skips the update and goes on as if released: the lock stays held.
      throw new Failed("the lock table's existence read failed: Liquibase skips its release");
    }
    try {
      update("UPDATE " + table + " SET LOCKED = FALSE, LOCKEDBY = NULL WHERE ID = " + id);
    } catch (SQLException e) {
      throw new Unknown("releaseLock: " + e);
    }
  }

  /** isDatabaseChangeLogLockTableCreated: SELECT ID FROM t succeeds. */
  private boolean tableExists() {
    try (Statement s = conn.createStatement();
        ResultSet rs = s.executeQuery("SELECT ID FROM " + table)) {
      return true;
    } catch (SQLException e) {
      // Liquibase takes any failure of this read for a missing table.
      return false;
    }
  }

  private int count(String query) throws SQLException {
    try (Statement s = conn.createStatement();
        ResultSet rs = s.executeQuery(query)) {
      return rs.next() ? (int) rs.getLong(1) : 0;
    }
  }

  private int update(String cql) throws SQLException {
    try (Statement s = conn.createStatement()) {
      return s.executeUpdate(cql);
    }
  }

  private void exec(String cql) throws SQLException {
    try (Statement s = conn.createStatement()) {
      s.execute(cql);
    }
  }

  static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "unknown";
    }
  }

  /** NetUtil.getLocalHostAddress: the local host's address, or the first non-loopback IPv4 one. */
  static String hostAddress() {
    try {
      InetAddress local = InetAddress.getLocalHost();
      if (!local.isLoopbackAddress()) return local.getHostAddress();
      for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        if (!ni.isUp() || ni.isLoopback()) continue;
        for (InetAddress a : Collections.list(ni.getInetAddresses())) {
          if (a instanceof Inet4Address && !a.isLoopbackAddress()) return a.getHostAddress();
        }
      }
      return local.getHostAddress();
    } catch (Exception e) {
      return "unknown";
    }
  }
}
