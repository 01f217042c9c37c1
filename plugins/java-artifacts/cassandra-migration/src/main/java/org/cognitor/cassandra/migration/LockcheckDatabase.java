package org.cognitor.cassandra.migration;

import com.datastax.oss.driver.api.core.CqlSession;

/**
 * lockcheck's application around cassandra-migration 2.6.1_v4's Database, in the library's package
 * because the one method it replaces, {@code execute(DbMigration)}, takes a package-private type.
 * Two changes, neither to the lock: the lock is named by lockcheck's lock name instead of the
 * keyspace's ({@link #getKeyspaceName} is the leader row's key and nothing else here: the tables
 * stay in the configured keyspace), and running a script is lockcheck's critical section. The
 * lead is taken and given back by the library's own takeLeadOnMigrations and
 * removeLeadOnMigrations, which MigrationTask.migrate() calls around the scripts.
 */
public final class LockcheckDatabase extends Database {
  /** What runs in place of a script: called with the lead held, in migrate()'s thread. */
  public interface Script {
    void run();
  }

  private final String lockName;
  private final MigrationRepository repository = new MigrationRepository("lockcheck/migration");
  private volatile Script script;

  public LockcheckDatabase(CqlSession session, String keyspace, String lockName) {
    super(session, new MigrationConfiguration().withKeyspaceName(keyspace));
    this.lockName = lockName;
  }

  /** The repository of one script (version 1), which this Database never records as applied. */
  public MigrationRepository repository() {
    return repository;
  }

  /** Sets what the next script runs (null: nothing). */
  public void onScript(Script s) {
    script = s;
  }

  @Override
  public String getKeyspaceName() {
    return lockName == null ? super.getKeyspaceName() : lockName;
  }

  @Override
  public void execute(DbMigration migration) {
    Script s = script;
    if (s != null) s.run();
    // No logMigration: the version stays behind the repository, so the next migration seeks the
    // lead again.
  }

  /** migrate() closes its Database at the end; the process keeps its one session. */
  @Override
  public void close() {}
}
