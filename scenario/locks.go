package scenario

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/spec"
)

// Form says how a catalogue lock is tested.
type Form string

const (
	// Artifact: the published library itself, from its registry, called
	// through its public API.
	Artifact Form = "artifact"
	// Reexpression: the original's statements, consistency levels, TTL
	// arithmetic, retries and error handling, written again (the original
	// has no artifact a test can load, or speaks a protocol Cassandra has
	// dropped).
	Reexpression Form = "re-expression"
)

// Lock is one real lock of the catalogue (docs/locks.md): where it comes
// from, what it promises, and what a user should know. Its rows are the
// scenario rows whose Recipe is its Recipe; the page joins them with the
// measured rates.
type Lock struct {
	// Name is the catalogue's heading.
	Name string
	// Recipe is the recipe or plug-in name its rows run (Row.Recipe).
	Recipe string
	// Source is the upstream repository (github.com/OWNER/NAME), Paths
	// the files followed there, Commit the commit pinned (40 hex digits),
	// Artifact the registry coordinate of an artifact tested as released.
	Source, Commit, Artifact string
	Paths                    []string
	Language                 string
	Form                     Form
	// Here is where lockcheck's side of it lives (a package or plug-in).
	Here string
	// Promise is what the lock claims, in its own terms.
	Promise string
	// Fix is the smallest change that would make it hold where it fails
	// ("" when it holds everywhere it was tried); Advice what a user of it
	// should do.
	Fix, Advice string
	// Missing says what a faithful re-expression could not keep, "" when
	// nothing.
	Missing string
}

// Catalogue is every real lock judged, in the page's order.
var Catalogue = []Lock{
	{
		Name: "ShedLock's Cassandra provider", Recipe: "shedlock",
		Source: "github.com/lukas-krecan/ShedLock", Commit: "2774caf15741eee26d4b7bfa913d12bfc94fe609",
		Paths:    []string{"providers/cassandra/shedlock-provider-cassandra/src/main/java/net/javacrumbs/shedlock/provider/cassandra/CassandraStorageAccessor.java"},
		Artifact: "net.javacrumbs.shedlock:shedlock-provider-cassandra:5.0.1 (Maven Central)",
		Language: "Java", Form: Artifact, Here: "plugins/java-locks (ShedLockLock)",
		Promise: "A scheduled task runs on at most one node at a time: a row per lock name holds `lockUntil`, an instant " +
			"of the client's clock; a free lock is taken with `INSERT ... IF NOT EXISTS`, an expired one with " +
			"`UPDATE ... IF lockUntil < :now`, extend and unlock with `IF lockUntil >= :now AND lockedBy = :host` " +
			"(QUORUM, SERIAL). No TTL: expiry is a comparison of client clocks.",
		Fix: "Take `now` from the server rather than from the client (or fence the protected work with a token bumped in " +
			"the same LWT): a clock that runs ahead must not be able to call a live lock expired.",
		Advice: "Keep every scheduler node's clock synchronised (NTP, with alarms on offset) and lockAtMostFor well above " +
			"both the task's length and the worst clock offset, with the task's writes bounded well inside it (a write a " +
			"partition slows past lockAtMostFor lands in the next holder's term, shedlock/partition); never rely on it for " +
			"work that must not overlap. It tolerates a slow write only while the task's start plus that write's latency " +
			"stays under lockAtMostFor: a coordinator paused 0.5 s past it lands the write after the next take " +
			"(shedlock/coord-gc-stall), so bound the task plus the worst GC pause or coordinator stall you expect well " +
			"inside lockAtMostFor. Give " +
			"every instance a host name of its own: lockedBy is InetAddress.getLocalHost's name, and instances that share " +
			"one (several JVMs on a host, host networking) extend and unlock each other's locks.",
		Missing: "Nothing of the lock: the released jar runs. The application around it is lockcheck's plug-in " +
			"(lockAtMostFor = the run's TTL, lockAtLeastFor = 0, a poll while ShedLock answers held); each client runs " +
			"in a UTS namespace with a host name of its own, as separate instances would. Maven Central here lists 5.0.1 " +
			"as the provider's last release; upstream's master (7.x) has the same statements, but throws on an LWT's " +
			"server error where 5.0.1 answers not locked.",
	},
	{
		Name: "Apache Cassandra Sidecar's cluster lease", Recipe: "sidecar",
		Source: "github.com/apache/cassandra-sidecar", Commit: "01cdae76b1a44e44faa7d1213f1e78c04ce088d4",
		Paths: []string{
			"server/src/main/java/org/apache/cassandra/sidecar/coordination/ClusterLeaseClaimTask.java",
			"server/src/main/java/org/apache/cassandra/sidecar/db/schema/SidecarLeaseSchema.java",
			"server/src/main/java/org/apache/cassandra/sidecar/db/SidecarLeaseDatabaseAccessor.java",
		},
		Language: "Java", Form: Reexpression, Here: "plugins/java-locks (SidecarLease)",
		Promise: "Best effort, in its own javadoc: several members of the electorate may hold the lease at once (partitions), " +
			"so what the holder runs must be safe to run twice. One row `'cluster_lease_holder'`: claim " +
			"`INSERT ... (name,owner) VALUES ('cluster_lease_holder',?) IF NOT EXISTS USING TTL <ttl>`, extend " +
			"`UPDATE ... USING TTL <ttl> SET owner = ? WHERE name = 'cluster_lease_holder' IF owner = ?` (TTL 120 s by " +
			"default, burnt into the statements), every 30 s or more; the session's LOCAL_ONE and SERIAL; no release. " +
			"The holder counts its lease from the reply (`Instant.now()` + TTL) and, when an extend's outcome or owner " +
			"is unknown, keeps the lease until that reckoning runs out.",
		Fix: "Count the lease from before the claim or extend was sent, less a second for Cassandra's whole-second expiry, " +
			"and step down at once when an extend's outcome is unknown; to be safe, fence the cluster-wide work with a " +
			"token bumped with each claim.",
		Advice: "Treat the lease as a scheduling hint: make the tasks it guards idempotent and safe to run twice, as its javadoc asks. " +
			"It tolerates no extend slower than the driver's request time-out (2 s by default): one that times out leaves the " +
			"holder on its own reckoning, up to a second past the row's expiry (sidecar/coord-net-delay: a coordinator 2.5 s " +
			"late); if it must hold, count the lease a second short of the TTL from the extend's send, and give it up on the " +
			"first extend that throws.",
		Missing: "Sidecar's driver 3 is replaced by the DataStax Java driver 4 (the statements, consistency levels and error " +
			"handling are Sidecar's). SidecarLeaseSchema is followed at 5a98c3faf33f and SidecarLeaseDatabaseAccessor at " +
			"2ee05f276c5c (the versions stored; at those the extend carries `USING TTL`). The run's TTL replaces 120 s and " +
			"the claim is polled, not run every 30 s; `'cluster_lease_holder'` is a literal, so a run has one lease. A claim " +
			"that throws leaves the task's owner unknown (null, Sidecar's indeterminate lease): an acquire that gives up " +
			"after one is answered unknown, since the claim may have applied.",
	},
	{
		Name: "Cassandra Reaper's leader election", Recipe: "reaper",
		Source: "github.com/thelastpickle/cassandra-reaper", Commit: "b0c172a9bb0389d7fc76757172fa1c7c60d4fa0f",
		Paths: []string{
			"src/server/src/main/java/io/cassandrareaper/storage/cassandra/CassandraConcurrencyDao.java",
			"src/server/src/main/resources/db/cassandra/034_init_reaper_db.cql",
			"src/server/src/main/java/io/cassandrareaper/service/RepairManager.java",
			"src/server/src/main/java/io/cassandrareaper/storage/cassandra/RetryPolicyImpl.java",
		},
		Language: "Java", Form: Reexpression, Here: "plugins/java-locks (ReaperLeader)",
		Promise: "One Reaper instance leads a repair segment (or run): take `INSERT INTO leader(leader_id, reaper_instance_id," +
			"reaper_instance_host, last_heartbeat)VALUES(?, ?, ?, toTimestamp(now())) IF NOT EXISTS USING TTL ?`, or, when " +
			"that fails, renew `UPDATE leader USING TTL ? SET ... WHERE leader_id = ? IF reaper_instance_id = ?`; release " +
			"`DELETE FROM leader WHERE leader_id = ? IF reaper_instance_id = ?`; QUORUM, LEAD_DURATION 90 s; LWTs never " +
			"retried (not idempotent). Reaper keeps no clock of a lead: it leads until a renew says otherwise.",
		Fix: "Bound the leader's belief by its own clock (stop before the TTL, less a margin, counted from before the " +
			"renew was sent) and fence the segment's writes with a token bumped with each lead.",
		Advice: "A paused Reaper, or one whose requests a partition or a killed node slows past the lead's TTL, can repair a " +
			"segment another instance also repairs: harmless for repair itself (it is idempotent), but do not reuse this " +
			"pattern for work that is not. A renew that times out (the driver's 2 s request time-out: a coordinator 2.5 s late, " +
			"reaper/coord-net-delay/leader), or one that contention with a contender's take leaves unknown on an idle " +
			"cluster (reaper/none/leader), leaves the row to expire up to a second before the lead counted from the last " +
			"renew's send: count the lead a second short and stop leading at the first renew that fails.",
		Missing: "The run's TTL (whole seconds) replaces LEAD_DURATION 90 s; leader_id, a timeuuid, is a version-1 UUID " +
			"made from the lock name; Reaper renews as its repair goes on, here at lockcheck's heartbeat. The paths are " +
			"at the commits their header names (the DAO at b0c172a9bb03, the schema at 575145837044, the retry " +
			"policy at e7f5dae52188, RepairManager at 8a4cf83df173).",
	},
	{
		Name: "Temporal's shard ownership", Recipe: "temporal-shard",
		Source: "github.com/temporalio/temporal", Commit: "6805caea59e35d0611ed96be69641b8d86bff11c",
		Paths: []string{
			"common/persistence/cassandra/shard_store.go",
			"common/persistence/cassandra/mutable_state_store.go",
			"service/history/shard/context_impl.go",
		},
		Language: "Go", Form: Reexpression, Here: "locks/temporal (recipe temporal-shard)",
		Promise: "A history host owns a shard while its `range_id` is the shard row's: taking a shard bumps it " +
			"(`UPDATE executions ... IF range_id = ?`), and every write is a logged batch carrying " +
			"`UPDATE executions SET range_id = ? ... IF range_id = ?` in the shard's partition (LOCAL_QUORUM, " +
			"LOCAL_SERIAL). Holds may overlap (a shard is stolen, not waited for); a stale owner can write nothing.",
		Fix: "Acknowledge only synced writes where one power cut can take every replica (one rack, one power domain): " +
			"commitlog_sync batch, or replicas spread over power domains.",
		Advice: "The pattern to copy: fencing kept in the data, checked in the same Paxos round as the write it guards. " +
			"It holds only for data in the fenced partition, and only as long as the data: on Cassandra's default " +
			"commitlog (periodic) a power cut of every replica at once undid acknowledged shard writes and moved range_id " +
			"back; on commitlog_sync batch it held. By its mechanism slowness cannot break it: a stale owner's write, however " +
			"late it lands (a link 2 s slow, a coordinator starved or its JVM stopped past the lease), carries the range id " +
			"it owned and is refused once a steal bumped it; the temporal-shard slowness rows assert so.",
		Missing: "The shard's ShardInfo protobuf is JSON ({shard_id, range_id, owner}); the protected set is one " +
			"workflow execution's blob. Hosts are given shards by a membership ring, here every client steals.",
	},
	{
		Name: "Netflix Astyanax's ColumnPrefixDistributedRowLock", Recipe: "astyanax",
		Source: "github.com/Netflix/astyanax", Commit: "e51608baa2ea4e174fed46a47063a1f74424a9dd",
		Paths:    []string{"astyanax-recipes/src/main/java/com/netflix/astyanax/recipes/locks/ColumnPrefixDistributedRowLock.java"},
		Language: "Java", Form: Reexpression, Here: "plugins/java-locks (AstyanaxRowLock)",
		Promise: "None beyond best effort (\"This recipe is not a transaction\"): write a `_LOCK_<timeuuid>` column " +
			"whose value is an expiry from the client's clock, read back every lock column at LOCAL_QUORUM, and back " +
			"off if another live one is there. No LWT.",
		Fix: "Use an LWT (`INSERT ... IF NOT EXISTS`) for the lock column, or fence the work with a token.",
		Advice: "Do not use it where mutual exclusion matters; two writers that write then read at once can both " +
			"see the other and both back off, or, with clocks apart, both proceed. A holder's writes are safe only while " +
			"they land within the lock timeout counted from its lock column's write: one held 3.5-4.5 s by a stalled " +
			"coordinator or a GC pause, past a 3 s timeout, lands after the next take (astyanax/coord-gc-stall, " +
			"astyanax/client-gc-stall), so keep the task plus the worst pause or slow write well inside expireLockAfter.",
		Missing: "Astyanax speaks Thrift, gone from Cassandra 4.0: the column family is its CQL view " +
			"(key, column1, value), with the driver's client-side timestamps as Thrift mutations carried. The lock " +
			"timeout (expireLockAfter, 60 minutes by default) is the run's TTL; no column TTL (withTtl unset); the " +
			"application retries a busy lock with a new lock column (RunOnce allows the recipe none).",
	},
	{
		Name: "cassandra-migration's leader lock", Recipe: "cassandra-migration",
		Source: "github.com/patka/cassandra-migration", Commit: "a93693c2d1e9d976342d7c09652bad5a3254db64",
		Paths: []string{
			"cassandra-migration/src/main/java/org/cognitor/cassandra/migration/Database.java",
			"cassandra-migration/src/main/java/org/cognitor/cassandra/migration/MigrationTask.java",
		},
		Artifact: "org.cognitor.cassandra:cassandra-migration:2.6.1_v4 (Maven Central)",
		Language: "Java", Form: Artifact, Here: "plugins/java-artifacts (cassandra-migration: CassandraMigration, LockcheckDatabase)",
		Promise: "With consensus on (`new MigrationTask(database, repository, true)`), one application instance migrates a " +
			"keyspace at a time: take the lead with `INSERT INTO schema_migration_leader (keyspace_name, leader, took_lead_at, " +
			"leader_hostname) VALUES (?, ?, toTimestamp(now()), ?) IF NOT EXISTS USING TTL 300` at QUORUM (serial: the " +
			"driver's SERIAL), leader a random UUID per Database; when not applied, sleep 10 s and try again while the schema " +
			"is behind the scripts; run every script; give the lead back with `DELETE FROM schema_migration_leader where " +
			"keyspace_name = ? IF leader = ?` at QUORUM. The lead is never renewed and migrate() never looks at its age. " +
			"Read from the 2.6.1_v4 sources jar and the tag: as believed, and two things more: the lead is taken only while " +
			"the recorded version is behind the scripts (a read at QUORUM before each try), and a DELETE that did not apply " +
			"is only logged.",
		Fix: "Renew the lead while scripts run (an `UPDATE ... USING TTL 300 ... IF leader = ?` every minute, stopping the " +
			"migration when one fails), or fence the migration's writes; at least make the TTL a setting longer than the " +
			"longest migration.",
		Advice: "Keep every migration well under 5 minutes, or run migrations from one job rather than from every instance " +
			"at start-up: a script that runs longer (or an instance paused, swapped or slowed that long) lets a second " +
			"instance take the lead and migrate at the same time. A migrating instance that dies holds the lead for up to " +
			"300 s: the other instances of the deployment sleep in 10 s steps and start (or fail their health checks) only " +
			"after the row expires; a contended LWT answered unknown (CASWriteUnknownException) makes migrate() throw, and if " +
			"that LWT applied the lead is held by nobody for the same 300 s. Nothing else is needed to free it. Slowness is " +
			"harmless while the migration plus the slowest write stays under those 300 s: a coordinator or the instance " +
			"stopped 3.5-4.5 s is far inside it (cassandra-migration/coord-gc-stall, cassandra-migration/client-gc-stall).",
		Missing: "Nothing of the lock: the released jar runs, its TTL and wait are constants of the class. The application " +
			"is lockcheck's plug-in: a subclass of Database in the library's package (execute takes a package-private type) " +
			"whose one script is lockcheck's critical section and is never recorded, so every migrate() seeks the lead, and " +
			"whose getKeyspaceName gives each lock name its own leader row in the run's keyspace. The grant has no lease " +
			"(lockcheck's TTL plays no part), so a pause past the lead's 300 s takes a row over five minutes long. An " +
			"acquire shorter than the 10 s wait tries once and gives up.",
	},
	{
		Name: "JanusGraph's ConsistentKeyLocker", Recipe: "janusgraph",
		Source: "github.com/JanusGraph/janusgraph", Commit: "30890c3959610e0a4687194d22f533dc71c2a766",
		Paths: []string{
			"janusgraph-core/src/main/java/org/janusgraph/diskstorage/locking/consistentkey/ConsistentKeyLocker.java",
			"janusgraph-core/src/main/java/org/janusgraph/diskstorage/Backend.java",
			"janusgraph-cql/src/main/java/org/janusgraph/diskstorage/cql/CQLKeyColumnValueStore.java",
			"janusgraph-cql/src/main/java/org/janusgraph/diskstorage/cql/builder/CQLStoreFeaturesBuilder.java",
		},
		Artifact: "org.janusgraph:janusgraph-cql:1.0.1 (Maven Central)",
		Language: "Java", Form: Artifact, Here: "plugins/java-artifacts (janusgraph: JanusGraphLocker)",
		Promise: "A graph transaction that locks a (key, column) for a uniqueness or consistency constraint holds it alone " +
			"(storage.lock.backend consistentkey, the default): write a claim column named by the client's clock " +
			"(microseconds) and the instance id, `USING TIMESTAMP` of that clock, at QUORUM, retried up to 3 times when it " +
			"fails or takes over lockWait (100 ms); at commit sleep until lockWait after the claim, read every claim of " +
			"the key at QUORUM, drop those older than lockExpire (300 s) by the reader's clock, and hold the lock when the " +
			"earliest remaining claim is its own; delete the claim at the commit's end. No LWT. Read from the 1.0.1 " +
			"sources jars: as believed; the claim's expiry is judged by the reader's clock, and JanusGraph also checks, " +
			"after the lock, that the values read in the transaction are unchanged.",
		Fix: "Take the claim with an LWT (`INSERT ... IF NOT EXISTS` on the lock key, with a TTL for expiry), or order " +
			"claims by a server-assigned time rather than each writer's clock.",
		Advice: "Keep every JanusGraph instance's clock synchronised, well within lockWait (100 ms): a clock behind by more " +
			"than a held claim's age makes its claim senior to it, and two transactions both pass their locks. Do not rely on " +
			"the locks alone for uniqueness across instances with unsynchronised clocks; JanusGraph's read-back of the " +
			"locked values narrows, but does not close, the window. A holder that dies leaves its claim for 300 s " +
			"(lockExpire): locks on that key fail until then. Size storage.lock.wait-time to a few QUORUM write times: on " +
			"the loaded test cluster the default 100 ms was often shorter than one, and such transactions fail with " +
			"\"Lock write retry count exceeded\". Slowness costs locks, not safety: a claim write slower than lockWait is " +
			"deleted and tried again, 3 tries, then the transaction fails (janusgraph/net-delay: links 0.2-2 s slow); a " +
			"claim stays senior through a stall of seconds (janusgraph/gc-stall), up to lockExpire (300 s).",
		Missing: "Nothing of the lock: the released jars run, built by Backend's own recipe over the store " +
			"`edgestore_lock_` and driven as ExpectedValueCheckingTransaction drives them (writeLock, checkLocks, deleteLocks " +
			"on a transaction with the store's key-consistent configuration), without a graph; the lock's key is the lock " +
			"name, its column one byte. JanusGraph 1.0.1 creates a missing table `WITH compression = " +
			"{'sstable_compression': ...}`, which Cassandra 5 refuses, so the plug-in creates `edgestore_lock_` first with " +
			"JanusGraph's columns and Cassandra's default compression. The application retries a transaction that lost " +
			"the seniority check, as applications do. No coord-* rows: JanusGraph builds its own session, which takes no " +
			"node filter, so a client cannot be kept to one coordinator (and the lock reads no server time).",
	},
	{
		Name: "Liquibase's Cassandra lock service", Recipe: "liquibase",
		Source: "github.com/liquibase/liquibase-cassandra", Commit: "3dc5b2eca3dd1b7c8f505adf31b1fc4ac1c9d1cf",
		Paths: []string{
			"src/main/java/liquibase/ext/cassandra/lockservice/LockServiceCassandra.java",
			"src/main/java/liquibase/ext/cassandra/sqlgenerator/LockDatabaseChangeLogGeneratorCassandra.java",
			"src/main/java/liquibase/ext/cassandra/sqlgenerator/UnlockDatabaseChangeLogGeneratorCassandra.java",
			"src/main/java/liquibase/ext/cassandra/sqlgenerator/InitializeDatabaseChangeLogLockTableGeneratorCassandra.java",
		},
		Language: "Java", Form: Reexpression, Here: "plugins/java-artifacts (liquibase: LiquibaseLock)",
		Promise: "One Liquibase runs a changelog at a time: take with `UPDATE DATABASECHANGELOGLOCK SET LOCKED = TRUE, " +
			"LOCKEDBY = '<host> (<address>)', LOCKGRANTED = <client millis> WHERE ID = 1 IF LOCKED = FALSE`, release with " +
			"`UPDATE ... SET LOCKED = FALSE, LOCKEDBY = NULL WHERE ID = 1`, no condition, no TTL; polled every 10 s for up to " +
			"5 minutes. Everything at the JDBC wrapper's default consistency, LOCAL_ONE (serial SERIAL). Checked against " +
			"the upstream files: as believed, and more: the take's [applied] is never read (the wrapper's Liquibase mode " +
			"answers -1 for every update), the grant is decided by counting rows `LOCKED = TRUE AND LOCKEDBY = '<me>' ALLOW " +
			"FILTERING` at LOCAL_ONE after it, and the same count before it answers \"not acquired\" when this host already " +
			"holds the lock.",
		Fix: "Decide the grant by the LWT's [applied] column (or read it back at SERIAL), release with `... IF LOCKEDBY = " +
			"'<me>'`, and name the holder by something unique per process (a UUID), not the host.",
		Advice: "Run Liquibase against Cassandra from one place at a time (a single deployment job), never from several " +
			"processes on one host or containers sharing a host name: they are one holder to it and migrate together. " +
			"Setting liquibase.hostDescription does not help here: the Cassandra generator leaves it out. A run that dies " +
			"holding the lock, or whose release is lost, leaves it held for good (no TTL): the next run waits 5 minutes " +
			"and fails with \"Could not acquire change log lock.  Currently locked by <host> (<address>) since <time>\" " +
			"until someone runs `liquibase releaseLocks`. The same can happen with no fault at all (liquibase/none): a " +
			"take whose commit (at LOCAL_ONE) had not reached the replica its LOCAL_ONE read-back asked is told \"not " +
			"acquired\" while the lock is now its own; that instance waits its 5 minutes and fails naming its own host " +
			"as the holder, and so does every later run, on any host, until `liquibase releaseLocks`. Where the lock " +
			"message names the very host that is waiting, that is this, not a concurrent migration: release the lock " +
			"and run again. Running Liquibase at consistency QUORUM (`consistency=QUORUM` in the JDBC URL) makes the " +
			"commit and the read-back meet on a replica, which closes this window; it does not help the host name. " +
			"Slowness makes no second holder (no TTL, no lease: liquibase/net-delay, liquibase/client-gc-stall), but links " +
			"0.2-2 s slow make that missed read-back, and so the stuck lock, more likely.",
		Missing: "liquibase-cassandra is not on Maven Central here, so its lock service is re-expressed; the statements " +
			"go through the JDBC wrapper its pom names (com.ing.data:cassandra-jdbc-wrapper 4.16.3, compliancemode=" +
			"Liquibase, driver 4.19.2), as Liquibase's executor sends them. Liquibase has one lock row (ID = 1) per " +
			"keyspace; here each lock name is a row with an ID of its own, the counts carry `ID = <id> AND`, and a " +
			"lock's initialisation inserts its row without Liquibase's TRUNCATE (which would wipe the other names' rows). " +
			"The host address is the first non-loopback IPv4 address, as NetUtil picks it. No coord-* rows: the JDBC " +
			"wrapper takes no node filter, so a client cannot be kept to one coordinator (a coordinator ahead would stamp " +
			"the take later than the next release, which is then shadowed: the lock stays held).",
	},
	{
		Name: "jroimartin/caslock", Recipe: "caslock",
		Source: "github.com/jroimartin/caslock", Commit: "0024c8247b604e940224d5892a20839cc6e6c862",
		Paths:    []string{"caslock.go"},
		Language: "Go", Form: Reexpression, Here: "locks/caslock (recipe caslock)",
		Promise: "Rows locked for at least `timeout`: `UPDATE ... USING TTL ? SET \"[lock]\" = ? WHERE id = ? IF \"[lock]\" = null` " +
			"with a TTL of twice the timeout, retried every 500 ms; release `... = null IF \"[lock]\" = ?`, its result " +
			"not read (QUORUM, SERIAL).",
		Fix: "Fence: keep a counter in the row bumped by the locking LWT, hand it to the holder, and make the protected " +
			"writes conditional on it.",
		Advice: "Finish the work well within `timeout` and never across a stall you cannot bound (GC, swap, a VM " +
			"paused, a write a partition holds up: caslock/partition); where a late write would do harm, fence it. Keep the nodes' clocks in step: a coordinator ahead by " +
			"more than twice the timeout, less the hold's age, grants a held row again. The lock cell lasts twice the " +
			"timeout, so a write held up to that long (twice the timeout, less the time since the take) still lands before " +
			"anyone else can take the lock; one held past it (caslock/coord-gc-stall: 7-8 s against a 6 s cell) lands after " +
			"the next take.",
		Missing: "Not on the Go module proxy, so re-expressed, not imported; one row per lock (caslock can lock " +
			"several at once), and the caller's deadline ends the retry loop, where caslock retries without end.",
	},
}

var (
	commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sourceRE = regexp.MustCompile(`^github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
)

// CheckCatalogue tells what is incomplete in the catalogue: a lock without
// its source, commit, promise or advice, an artifact without its
// coordinate, a re-expression that does not say where it lives, a name or
// recipe given twice.
func CheckCatalogue(locks []Lock) error {
	var errs []error
	names, recipes := map[string]bool{}, map[string]bool{}
	for _, l := range locks {
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("lock %q: %s", l.Name, fmt.Sprintf(format, a...)))
		}
		if l.Name == "" || l.Recipe == "" {
			bad("no name or recipe")
		}
		if names[l.Name] || recipes[l.Recipe] {
			bad("name or recipe %q given twice", l.Recipe)
		}
		names[l.Name], recipes[l.Recipe] = true, true
		if !sourceRE.MatchString(l.Source) {
			bad("source %q: want github.com/OWNER/NAME", l.Source)
		}
		if !commitRE.MatchString(l.Commit) {
			bad("commit %q: want the 40 hex digits of the commit followed", l.Commit)
		}
		if len(l.Paths) == 0 {
			bad("no path followed")
		}
		switch l.Form {
		case Artifact:
			if l.Artifact == "" {
				bad("an artifact without its coordinate")
			}
		case Reexpression:
			if l.Artifact != "" {
				bad("a re-expression with an artifact coordinate")
			}
		default:
			bad("form %q: want %s or %s", l.Form, Artifact, Reexpression)
		}
		for field, v := range map[string]string{"language": l.Language, "here": l.Here, "promise": l.Promise, "advice": l.Advice} {
			if strings.TrimSpace(v) == "" {
				bad("no %s", field)
			}
		}
	}
	return errors.Join(errs...)
}

// RowsOf are the rows of lock l, in the table's order.
func RowsOf(l Lock, rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Recipe == l.Recipe {
			out = append(out, r)
		}
	}
	return out
}

// RunCommand is the command line that reproduces one run of the row (run
// 0's seed): the row as `lockcheck run` flags; a row whose faults are a
// schedule dealt as written runs as itself (`lockcheck matrix`), since
// flags would draw faults instead.
func RunCommand(r Row) string {
	if r.Schedule != nil && len(r.Schedule.Steps) > 0 {
		return fmt.Sprintf("lockcheck matrix --rows '%s'", r.Name)
	}
	var b strings.Builder
	b.WriteString("lockcheck run")
	if r.Command != "" {
		fmt.Fprintf(&b, " --lock-cmd '%s' --name %s", r.Command, r.Recipe)
		if r.Promise != "" && r.Promise != "mutex" {
			fmt.Fprintf(&b, " --promise %s", r.Promise)
		}
	} else {
		fmt.Fprintf(&b, " --lock %s", r.Recipe)
	}
	if len(r.Faults) > 0 {
		fmt.Fprintf(&b, " --nemesis %s --interval %s", strings.Join(r.Faults, ","), r.Interval)
	}
	if r.Shape() != "cycle" {
		fmt.Fprintf(&b, " --workload %s", r.Shape())
	}
	if r.Pin {
		b.WriteString(" --pin-clients")
	}
	if r.RetireStuck {
		b.WriteString(" --retire-stuck")
	}
	if r.SkewAhead {
		b.WriteString(" --skew-ahead")
	}
	if r.KillTarget != "" {
		fmt.Fprintf(&b, " --kill-target %s", r.KillTarget)
	}
	if r.FreesWithin > 0 {
		fmt.Fprintf(&b, " --stuck-bound %s", r.FreesWithin)
	}
	if r.SkewMax > 0 {
		fmt.Fprintf(&b, " --skew-min %s --skew-max %s", r.SkewMin, r.SkewMax)
	}
	if n := r.Net; n != (nemesis.NetBounds{}) {
		fmt.Fprintf(&b, " --net-delay %s..%s --net-jitter %s --net-rate %d..%d", n.DelayMin, n.DelayMax, n.Jitter, n.RateMin, n.RateMax)
	}
	b.WriteString(r.Slow.Flags())
	if r.AimWrite {
		b.WriteString(" --aim-write")
	}
	if r.ClientCount() != DefaultClients {
		fmt.Fprintf(&b, " --clients %d", r.ClientCount())
	}
	if r.LockCount() != DefaultLocks {
		fmt.Fprintf(&b, " --locks %d", r.LockCount())
	}
	fmt.Fprintf(&b, " --time %s --quiet %s --seed %d", r.Time, Quiet, r.RunSeed(0))
	return b.String()
}

// WriteCatalogue renders docs/locks.md: per lock of the catalogue its
// source, promise, the asserted rows with their measured rates and anomaly
// counts, the mechanism of every violation, the fix, the advice and the
// command of each row. The page is generated (TestLocksPage, -update).
func WriteCatalogue(w io.Writer, locks []Lock, rows []Row, rates []Rate) error {
	var b strings.Builder
	b.WriteString("# Real locks judged\n\n" +
		"<!-- Generated from scenario/locks.go, scenario/rows.go and scenario/rates.jsonl by `go test ./scenario -update`: edit those, not this page. -->\n\n" +
		"The Cassandra locks open-source projects ship, each under the faults that matter for it: the released\n" +
		"artifact where a registry has one, else a re-expression that keeps the original's statements word for\n" +
		"word, its consistency levels, TTL arithmetic, retries and error handling (each file names the upstream\n" +
		"commit it follows). Every verdict below is an asserted scenario row ([findings.md](findings.md)): a\n" +
		"known-unsafe row must be caught in at least 9 of 10 runs (or the lower bar its Asserted cell names), a safe\n" +
		"row valid in every run. \"Measured\" is\n" +
		"the last catch rate recorded at the row's settings (`lockcheck matrix --rows NAME --repeat N --record\n" +
		"scenario/rates.jsonl`, earlier batches of other seeds added in), with the anomalies the checker\n" +
		"reported per run and their kinds\n" +
		"([checkers.md](checkers.md)). The faults are those of [faults.md](faults.md); the shared cluster is\n" +
		"3 nodes, Paxos v1, commitlog periodic. \"Availability\" is liveness, never part of the verdict: the range,\n" +
		"over the measured runs, of the share of each run in which an acquire could be granted within the acquire\n" +
		"time-out (5 s), and the runs that left a lock held to the end by a dead holder ([checking.md](checking.md#liveness));\n" +
		"a row may assert it (\"frees within\", \"stays stuck\").\n\n")
	byRow := map[string][]Rate{}
	for _, rt := range rates {
		byRow[rt.Row] = append(byRow[rt.Row], rt)
	}
	b.WriteString("| lock | language | tested as | unsafe under | holds under |\n| --- | --- | --- | --- | --- |\n")
	for _, l := range locks {
		var unsafe, safe []string
		for _, r := range RowsOf(l, rows) {
			name := faultsWords(r)
			switch n, runs := contradicted(r, byRow[r.Name]); {
			case r.Unsafe && slices.Contains(unsafe, name): // a shrunk row repeats its fault
			case r.Unsafe:
				unsafe = append(unsafe, name)
			case n > 0:
				unsafe = append(unsafe, fmt.Sprintf("%s (%d of %d runs)", name, n, runs))
			default:
				safe = append(safe, name)
			}
		}
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s | %s | %s |\n", l.Name, anchor(strings.ToLower(strings.ReplaceAll(l.Name, " ", "-"))),
			l.Language, l.Form, orDash(unsafe), orDash(safe))
	}
	for _, l := range locks {
		fmt.Fprintf(&b, "\n## %s\n\n", l.Name)
		fmt.Fprintf(&b, "Source: [%s](https://%s/tree/%s) at `%s`: %s. ", l.Source, l.Source, l.Commit, l.Commit[:12], codeList(l.Paths))
		if l.Form == Artifact {
			fmt.Fprintf(&b, "Tested as the released artifact `%s`. ", l.Artifact)
		} else {
			b.WriteString("Re-expressed (no artifact a test can load). ")
		}
		fmt.Fprintf(&b, "%s; lockcheck's side: `%s`.\n\n", l.Language, l.Here)
		fmt.Fprintf(&b, "**Promise.** %s\n\n", l.Promise)
		lrows := RowsOf(l, rows)
		if len(lrows) == 0 {
			b.WriteString("**No asserted row yet.**\n")
		} else {
			b.WriteString("| row | faults | workload | time | asserted | measured | anomalies per run | availability | tier |\n" +
				"| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
			for _, r := range lrows {
				measured, anomalies, avail := "not measured", "-", "-"
				if rt, batches, ok := Measured(r, byRow[r.Name]); ok {
					measured = measuredCell(rt, batches, " invalid")
					avail = availabilityCell(rt)
					if rt.Anomalies != "" {
						anomalies = rt.Anomalies
						if len(rt.Kinds) > 0 {
							anomalies += " (" + strings.Join(rt.Kinds, ", ") + ")"
						}
					}
				}
				as := asserted(r)
				if w := r.liveWords(); w != "" {
					as += ", " + w
				}
				fmt.Fprintf(&b, "| [`%s`](findings.md#%s) | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Name, anchor(r.Name),
					faultsCell(r), r.Shape(), secs(r.Time), as, measured, anomalies, avail, r.Tier)
			}
			var broke, held []string
			for _, r := range lrows {
				line := fmt.Sprintf("- `%s`: %s", r.Name, r.Mechanism)
				n, runs := contradicted(r, byRow[r.Name])
				switch {
				case r.Load != nil:
					line = fmt.Sprintf("- `%s`: %s %s", r.Name, loadWords(r, byRow[r.Name]), r.Mechanism)
				case n > 0:
					line = fmt.Sprintf("- `%s`: asserted valid, yet invalid in %d of %d measured runs. %s", r.Name, n, runs, r.Mechanism)
				}
				if r.Unsafe || n > 0 || r.Load != nil {
					broke = append(broke, line)
				} else {
					held = append(held, line)
				}
			}
			if len(broke) > 0 {
				b.WriteString("\n**How it breaks.**\n\n" + strings.Join(broke, "\n") + "\n")
			}
			if len(held) > 0 {
				b.WriteString("\n**Why it holds.**\n\n" + strings.Join(held, "\n") + "\n")
			}
		}
		fix := l.Fix
		if fix == "" {
			fix = "None needed where it was tried."
		}
		fmt.Fprintf(&b, "\n**Smallest fix.** %s\n\n**What to do.** %s\n", fix, l.Advice)
		if sp := slownessParagraph(lrows, byRow); sp != "" {
			fmt.Fprintf(&b, "\n**Slowness it tolerates.** %s\n", sp)
		}
		if l.Missing != "" {
			fmt.Fprintf(&b, "\n**Not kept.** %s\n", l.Missing)
		}
		if len(lrows) > 0 {
			b.WriteString("\n**Reproduce** (one run of each row, on the cluster of `lockcheck cluster up`; `lockcheck matrix --rows NAME --repeat 10` repeats it with the row's seeds):\n\n```sh\n")
			for _, r := range lrows {
				b.WriteString(RunCommand(r) + "\n")
			}
			b.WriteString("```\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// contradicted counts the invalid runs among a safe row's measured ones:
// the page must not list a lock as holding where a measurement saw it
// break, whatever the row asserts.
func contradicted(r Row, rates []Rate) (invalid, runs int) {
	if r.Unsafe || r.Load != nil {
		return 0, 0
	}
	rt, _, ok := Measured(r, rates)
	if !ok {
		return 0, 0
	}
	return rt.Invalid, rt.Runs
}

// loadWords says what a row whose verdict hinges on the load asserts and
// what its measured runs showed: valid where no request is slowed past
// its lease, invalid on a loaded machine only by its mechanism's kinds,
// which its slowness row deals on demand.
func loadWords(r Row, rates []Rate) string {
	by := "the machine's load"
	if len(r.Faults) > 0 {
		by += ", or the fault itself"
	}
	s := fmt.Sprintf("valid where nothing slows a request past its lease; where something does (%s), it shows only %s, "+
		"as `%s` makes certain.", by, strings.Join(r.Load.Kinds, ", "), r.Load.Row)
	rt, _, ok := Measured(r, rates)
	if !ok || rt.Invalid == 0 {
		return s
	}
	load := ""
	if rt.Load != "" {
		load = " at load " + rt.Load
	}
	return s + fmt.Sprintf(" Invalid in %d of %d measured runs%s.", rt.Invalid, rt.Runs, load)
}

func faultsWords(r Row) string {
	s := r.FaultsName()
	if len(r.Faults) == 0 {
		s = "no fault"
	}
	var notes []string
	if r.Shape() != "cycle" {
		notes = append(notes, r.Shape())
	}
	// The same fault holds on one commitlog and breaks on the other: the
	// summary must say which.
	if r.Cluster.LazyFS {
		notes = append(notes, "commitlog "+r.Cluster.commitlog())
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

func codeList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = "`" + p + "`"
	}
	return strings.Join(q, ", ")
}

// slownessKinds are the fault kinds that make a request slow (issue 48).
var slownessKinds = []string{nemesis.NetDelay, nemesis.CoordNetDelay, nemesis.NetRate, nemesis.SlowNode, nemesis.CoordSlowNode,
	nemesis.GCStall, nemesis.CoordGCStall, nemesis.ClientGCStall, nemesis.SlowDisk}

// slowness is what a slowness row does to a request, with its bounds
// ("its coordinator's JVM stopped 3.5-4.5 s between a holder's read and its
// write"), or "" for a row of no slowness kind.
func slowness(r Row) string {
	if len(r.Faults) != 1 || !slices.Contains(slownessKinds, r.Faults[0]) {
		return ""
	}
	sl := r.Slow.WithDefaults()
	nb := r.Net
	if nb == (nemesis.NetBounds{}) {
		nb = nemesis.DefaultNetBounds
	}
	span := func(a, b time.Duration) string { return fmt.Sprintf("%g-%g s", a.Seconds(), b.Seconds()) }
	share := func(a, b float64) string {
		if a == b {
			return fmt.Sprintf("%g %% of a core", a*100)
		}
		return fmt.Sprintf("%g-%g %% of a core", a*100, b*100)
	}
	switch r.Faults[0] {
	case nemesis.CoordGCStall:
		return "its coordinator's JVM stops for " + span(sl.StallMin, sl.StallMax) + " between a holder's read and its write"
	case nemesis.GCStall:
		return "a node's JVM stops for " + span(sl.StallMin, sl.StallMax) + " at a time"
	case nemesis.ClientGCStall:
		return "the client stalls for " + span(sl.StallMin, sl.StallMax) + " between its read and its write"
	case nemesis.CoordNetDelay:
		if r.AimWrite {
			return "everything its coordinator sends is " + span(nb.DelayMin, nb.DelayMax) + " late from a holder's write on"
		}
		return "everything its coordinator sends is " + span(nb.DelayMin, nb.DelayMax) + " late"
	case nemesis.NetDelay:
		return "links are delayed " + span(nb.DelayMin, nb.DelayMax)
	case nemesis.NetRate:
		return fmt.Sprintf("links are held to %d-%d kbit/s", nb.RateMin, nb.RateMax)
	case nemesis.CoordSlowNode:
		if r.AimWrite {
			return "its coordinator is starved to " + share(sl.CPUMin, sl.CPUMax) + " from a holder's write on"
		}
		return "its coordinator is starved to " + share(sl.CPUMin, sl.CPUMax)
	case nemesis.SlowNode:
		return "a node is starved to " + share(sl.CPUMin, sl.CPUMax)
	case nemesis.SlowDisk:
		return "every write and fsync of a node is " + span(sl.DiskMin, sl.DiskMax) + " slow"
	}
	return ""
}

// slownessParagraph is a lock's tolerance of slowness as its rows measured
// it: each slowness row's bounds against the run's TTL and what it showed,
// and the rows a loaded machine broke with no slowness fault. "" for a lock
// with neither.
func slownessParagraph(rows []Row, byRow map[string][]Rate) string {
	var parts []string
	for _, r := range rows {
		what := slowness(r)
		if what == "" {
			continue
		}
		rt, _, ok := Measured(r, byRow[r.Name])
		verdict, measured := "holds when ", ""
		if r.Unsafe {
			verdict = "breaks when "
		}
		if ok {
			measured = fmt.Sprintf("invalid in %d of %d measured runs", rt.Invalid, rt.Runs)
		} else {
			// An asserted row no run has judged yet says so, not that it held.
			verdict, measured = "is asserted to "+strings.TrimSuffix(verdict, "s when ")+" when ", "not measured yet"
		}
		parts = append(parts, fmt.Sprintf("%s%s (`%s`, %s)", verdict, what, r.Name, measured))
	}
	var loaded []string
	for _, r := range rows {
		if r.Load == nil {
			continue
		}
		if rt, _, ok := Measured(r, byRow[r.Name]); ok && rt.Invalid > 0 {
			loaded = append(loaded, fmt.Sprintf("`%s` broke in %d of %d runs (load %s)", r.Name, rt.Invalid, rt.Runs, rt.Load))
		}
	}
	if len(parts) == 0 && len(loaded) == 0 {
		return ""
	}
	s := "No slowness row yet."
	if len(parts) > 0 {
		s = fmt.Sprintf("With the rows' %g s TTL, it %s.", spec.DefaultTTL.Seconds(), strings.Join(parts, "; it "))
	}
	if len(loaded) > 0 {
		s += " Its rows without a slowness fault broke only where the machine's load or the fault slowed a request as much: " +
			strings.Join(loaded, ", ") + "."
	}
	return s
}
