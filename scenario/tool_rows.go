package scenario

import (
	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/nemesis"
	"github.com/lockcheck/lockcheck/workload"
)

// The locks inside tools (issue 49, docs/locks.md, plugins/java-artifacts):
// cassandra-migration's leader lock and JanusGraph's ConsistentKeyLocker as
// released, Liquibase's Cassandra lock service re-expressed. Seeds
// 24950-24999. Measured catch rates are in scenario/rates.jsonl.
var toolRows = []Row{
	{
		Name: "cassandra-migration/none", Recipe: "cassandra-migration", Command: migration, Time: 20 * s, Interval: 3 * s, Seed: 24950,
		Want: checker.Valid, Tier: Full,
		Mechanism: "INSERT ... IF NOT EXISTS USING TTL 300 at QUORUM/SERIAL takes the lead, DELETE ... IF leader = ? gives it " +
			"back: one leader at a time.",
	},
	{
		Name: "cassandra-migration/client-pause", Recipe: "cassandra-migration", Command: migration, Faults: []string{nemesis.ClientPause},
		Time: 30 * s, Interval: 3 * s, Seed: 24951,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The grant has no lease, so a paused leader stalls for the pause extra (3 s), far inside the lead's 300 s TTL: " +
			"the others' INSERT ... IF NOT EXISTS finds the row and waits.",
	},
	{
		Name: "cassandra-migration/client-clock", Recipe: "cassandra-migration", Command: migration, Faults: []string{nemesis.ClientClock},
		Time: 30 * s, Interval: 3 * s, Seed: 24952,
		Want: checker.Valid, Tier: Full,
		Mechanism: "No client clock in the lock: the TTL runs on the replicas, took_lead_at is the coordinator's now(), an LWT's " +
			"write time its ballot's.",
	},
	{
		Name: "cassandra-migration/partition", Recipe: "cassandra-migration", Command: migration, Faults: []string{nemesis.Partition},
		Time: 30 * s, Interval: 3 * s, Seed: 24953,
		Want: checker.Valid, Tier: Full,
		Mechanism: "Paxos at QUORUM/SERIAL: a minority's LWT fails or is answered unknown (migrate() throws), never granted twice.",
	},
	{
		Name: "cassandra-migration/kill", Recipe: "cassandra-migration", Command: migration, Faults: []string{nemesis.Kill},
		Time: 30 * s, Interval: 3 * s, Seed: 24954,
		Want: checker.Valid, Tier: Full,
		Mechanism: "A killed replica leaves a quorum for the LWTs; the lead row's TTL is not touched.",
	},
	{
		Name: "cassandra-migration/coord-clock", Recipe: "cassandra-migration", Command: migration, Faults: []string{nemesis.CoordClock}, Pin: true,
		Time: 30 * s, Interval: 3 * s, Seed: 24955,
		Want: checker.Valid, Tier: Full,
		Mechanism: "A coordinator seconds ahead moves ballots and the TTL's start by seconds; the TTL is 300 s and the lead is " +
			"given back by an LWT, so nothing expires early enough to matter.",
	},
	{
		// The lead's TTL is 300 s, compiled into the library: the stall
		// must outlast it, so the row is over five minutes long.
		Name: "cassandra-migration/client-pause/shrunk", Recipe: "cassandra-migration", Command: migration, Faults: []string{nemesis.ClientPause},
		Clients: 2, Time: 330 * s, Interval: 3 * s, Seed: 24956, Schedule: migrationStall,
		Want: checker.Invalid, Unsafe: true, Tier: Full,
		Mechanism: "A leader stalled 310 s, past the lead row's TTL of 300 s, which is never renewed: the other instance's " +
			"INSERT ... IF NOT EXISTS, retried, takes the lead and adds, then the stalled leader, which migrate() never " +
			"tells that its lead ran out, writes over it (overlapping-holds, lost-add). A migration longer than 5 " +
			"minutes does the same without any pause.",
	},
	{
		// A migration lock's users ask what happens to a deployment whose
		// migrating instance dies: the lead stays taken for the rest of the
		// lead row's 300 s TTL, a constant of the library. Kills are armed
		// 1-3 s apart (interval 2 s), so that one meets the first holders:
		// a lock stuck before (an LWT answered unknown under load) has no
		// holder left to kill.
		Name: "cassandra-migration/client-kill", Recipe: "cassandra-migration", Command: migration, Faults: []string{nemesis.ClientKill},
		KillTarget: nemesis.KillTargetHold, Time: 20 * s, Interval: 2 * s, Seed: 24957,
		Want: checker.Valid, StaysStuck: true, Tier: Quick,
		Mechanism: "The killed leader's row stays until its TTL of 300 s runs out (nothing renews it and no one else may " +
			"delete it): every other instance's INSERT ... IF NOT EXISTS, retried every 10 s, is refused for the rest of " +
			"the run (stuck, client-kill). A deployment whose migrating instance dies waits up to five minutes. Safety holds.",
	},
	{
		Name: "janusgraph/none", Recipe: "janusgraph", Command: janusgraph, Time: 20 * s, Interval: 3 * s, Seed: 24960,
		Want: checker.Valid, Tier: Full,
		Mechanism: "With one clock for every client, the earliest claim column is the first one written: one holder at a time.",
	},
	{
		// The leader shape holds the lock for seconds, so a contender's take
		// meets a live holder; its claim is then older than the holder's only
		// when the skew exceeds the hold's age, hence skews of 10-30 s (the
		// cycle shape's holds of milliseconds are caught less often: see
		// docs/measurements.md).
		Name: "janusgraph/client-clock/leader", Recipe: "janusgraph", Command: janusgraph, Workload: workload.ShapeLeader,
		Faults: []string{nemesis.ClientClock}, SkewMin: 10 * s, SkewMax: 30 * s, Time: 20 * s, Interval: 3 * s, Seed: 24961,
		Want: checker.Invalid, Unsafe: true, Tier: Quick,
		Mechanism: "A claim is named by its writer's clock and the earliest live claim wins: an instance whose clock is behind " +
			"by more than the leader's hold writes a claim older than the leader's, reads it first and takes the lock the " +
			"leader still holds (overlapping-holds, lost-add). No LWT arbitrates.",
	},
	{
		Name: "janusgraph/client-pause", Recipe: "janusgraph", Command: janusgraph, Faults: []string{nemesis.ClientPause},
		Time: 30 * s, Interval: 3 * s, Seed: 24962,
		Want: checker.Valid, Tier: Full,
		Mechanism: "No lease: a paused holder stalls 3 s, far inside the claims' 300 s expiry; its claim stays the earliest.",
	},
	{
		Name: "janusgraph/partition", Recipe: "janusgraph", Command: janusgraph, Faults: []string{nemesis.Partition},
		Time: 30 * s, Interval: 3 * s, Seed: 24963,
		Want: checker.Valid, Tier: Full,
		Mechanism: "QUORUM writes and reads: a claim that reached no quorum fails its write and is retried under a new time; " +
			"a read that saw a quorum sees every earlier acknowledged claim.",
	},
	{
		Name: "janusgraph/kill", Recipe: "janusgraph", Command: janusgraph, Faults: []string{nemesis.Kill},
		Time: 30 * s, Interval: 3 * s, Seed: 24964,
		Want: checker.Valid, Tier: Full,
		Mechanism: "A killed replica leaves a quorum for the claims' writes and reads.",
	},
	{
		// Kills armed 1-3 s apart, as cassandra-migration/client-kill's.
		Name: "janusgraph/client-kill", Recipe: "janusgraph", Command: janusgraph, Faults: []string{nemesis.ClientKill},
		KillTarget: nemesis.KillTargetHold, Time: 20 * s, Interval: 2 * s, Seed: 24965,
		Want: checker.Valid, StaysStuck: true, Tier: Full,
		Mechanism: "The killed holder's claim column stays the earliest until it is older than the lock expiry (300 s, " +
			"storage.lock.expiry-time): every later claim reads it first and fails (stuck, client-kill). Safety holds.",
	},
	{
		Name: "liquibase/none", Recipe: "liquibase", Command: liquibase, Time: 20 * s, Interval: 3 * s, Seed: 24970,
		Want: checker.Valid, Tier: Full,
		Mechanism: "Instances with host names of their own: the UPDATE ... IF LOCKED = FALSE lets one through, and an " +
			"instance's read-back finds its own name only where its take applied: one holder at a time. Yet the lock can " +
			"stick with no fault at all: the take's commit goes at LOCAL_ONE (the wrapper's consistency), so the LOCAL_ONE " +
			"read-back that decides the grant can reach a replica the commit has not reached yet. acquireLock then answers " +
			"not acquired while the row says LOCKED = TRUE and names this host (the plug-in's SERIAL read finds it: " +
			"acquire-unknown); from then on this instance's own acquireLock refuses the lock as held by itself and every " +
			"other take finds it taken (stuck, to the end of the run).",
	},
	{
		// Every client under one host name, as instances sharing a host
		// (several JVMs, host networking) are: a flaw that needs no fault,
		// only two takes close enough together (the second's count before
		// its take must run before the first's take applies): five clients
		// meet oftener than two (docs/measurements.md).
		Name: "liquibase/none/shrunk", Recipe: "liquibase", Command: "plugins/java-artifacts/run liquibase-one-host",
		Time: 30 * s, Interval: 3 * s, Seed: 24971, Schedule: &nemesis.Schedule{Source: "five instances on one host"},
		Want: checker.Invalid, Unsafe: true, Catch: 8, Tier: Quick,
		Mechanism: "Liquibase ignores its LWT's answer and decides the grant by counting rows LOCKED = TRUE AND LOCKEDBY = " +
			"'<host> (<address>)': two instances on one host have one name, so the one whose UPDATE ... IF LOCKED = FALSE " +
			"did not apply reads the other's lock as its own and goes on (overlapping-holds, lost-add). A run whose take " +
			"was answered unknown early stays valid: the replacement process has the same name, so its count before " +
			"the take finds the lock \"held by this host\" and it never takes it again (stuck).",
	},
	{
		Name: "liquibase/client-pause", Recipe: "liquibase", Command: liquibase, Faults: []string{nemesis.ClientPause},
		Time: 30 * s, Interval: 3 * s, Seed: 24972,
		Want: checker.Valid, Tier: Full,
		Mechanism: "No TTL and no lease: a paused holder keeps the lock through its pause and the others wait.",
	},
	{
		Name: "liquibase/client-clock", Recipe: "liquibase", Command: liquibase, Faults: []string{nemesis.ClientClock},
		Time: 30 * s, Interval: 3 * s, Seed: 24973,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The unconditional release carries the client's clock and the take its ballot's: a release from a clock " +
			"behind is shadowed and leaves the lock held (stuck), one from a clock ahead shadows the next takes, whose " +
			"read-back then finds nothing and answers not acquired. Either way no second holder.",
	},
	{
		Name: "liquibase/partition", Recipe: "liquibase", Command: liquibase, Faults: []string{nemesis.Partition},
		Time: 30 * s, Interval: 3 * s, Seed: 24974,
		Want: checker.Valid, Tier: Full,
		Mechanism: "The take is an LWT; the LOCAL_ONE read-back can only miss a grant (answered not acquired, the lock then " +
			"stuck), and reads the instance's own name from a stale replica only where the instance held it before and " +
			"that replica missed both its release and the next take.",
	},
	{
		// The kill is armed 1-3 s after the clients start (interval 2 s),
		// so that it meets a holder: armed later, it may find the lock
		// already stuck by itself (liquibase/none), with no holder to kill.
		Name: "liquibase/client-kill", Recipe: "liquibase", Command: liquibase, Faults: []string{nemesis.ClientKill},
		KillTarget: nemesis.KillTargetHold, Time: 30 * s, Interval: 2 * s, Seed: 24976,
		Want: checker.Valid, StaysStuck: true, Tier: Full,
		Mechanism: "The killed holder's row stays LOCKED = TRUE with its host's name and no TTL: the others' UPDATE ... " +
			"IF LOCKED = FALSE never applies, and the instance restarted on that host finds its own name and refuses the " +
			"lock as held by itself (stuck, client-kill). A deployment whose migrating instance dies waits 5 minutes and " +
			"fails until someone runs `liquibase releaseLocks`. Safety holds. A run whose lock stuck by itself before the " +
			"kill was armed (a take answered unknown under load, or liquibase/none's missed read-back) has no holder " +
			"to kill and deals none.",
	},
	{
		Name: "liquibase/kill", Recipe: "liquibase", Command: liquibase, Faults: []string{nemesis.Kill},
		Time: 30 * s, Interval: 3 * s, Seed: 24975,
		Want: checker.Valid, Tier: Full,
		Mechanism: "A killed replica leaves a quorum for the take; the LOCAL_ONE reads go to a live replica.",
	},
}

// The tool plug-ins' command lines (plugins/java-artifacts/run).
const (
	migration  = "plugins/java-artifacts/run cassandra-migration"
	janusgraph = "plugins/java-artifacts/run janusgraph"
	liquibase  = "plugins/java-artifacts/run liquibase"
)

// migrationStall is cassandra-migration's stall past its lead's TTL (300 s,
// a constant of the library): one stall of 310 s, 2 s in.
var migrationStall = &nemesis.Schedule{Source: "one stall past cassandra-migration's 300 s lead TTL, 2 s in", Steps: []nemesis.Step{
	{Kind: nemesis.ClientPause, At: nemesis.Duration(2 * s), For: nemesis.Duration(310 * s), Value: []byte(`{"ms":310000}`)},
}}
