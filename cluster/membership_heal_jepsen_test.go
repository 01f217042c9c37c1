//go:build jepsen

package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/cluster"
	"github.com/lockcheck/lockcheck/cluster/clustertest"
)

// The heal of a range movement that failed because a node it streamed with
// died, on a real cluster (3 nodes, RF 2, one spare): streams are slowed so
// that a node can be killed inside one, the movement's failure is seen, and
// Node.Finish completes it as the membership kinds do. A bootstrap whose
// source is killed stays joining (UJ); 4.x resumes it (nodetool bootstrap
// resume), 5.0 refuses that and it starts again from empty data
// (Version.ResumesBootstrap). A decommission whose receiver is killed stays
// leaving (UL) and runs again (CASSANDRA-12008: it resumes); one whose
// leaver itself is killed is seen down and leaving (DL), and the leaver
// restarts as a member and decommissions again. The joined node's data is read back with
// its co-replicas paused, so that it alone answers for its ranges.
//
// The ring: n1, n2, n3 split it evenly; spare n4 takes the middle of n1's
// successor range. RF 2 (SimpleStrategy): n4 gains (n3, n1] from n2 and
// (n1, n4] from n3, which lose them; a decommissioning n2 gives (n3, n1]
// to n3 and (n1, n2] to n1.
//
// It runs on the default release line; LOCKCHECK_HEAL_VERSION=4.1 runs it
// on another, whose failed bootstrap takes the resume path instead (4.0's
// whole-SSTable streams cannot be capped: Version.ThrottlesEntireSSTables).
func TestMembershipHeal(t *testing.T) {
	if os.Getenv("LOCKCHECK_FULL") == "" {
		t.Skip("a full-tier test (minutes of bootstraps): LOCKCHECK_FULL=1")
	}
	version, suffix := cluster.DefaultVersion, "heal"
	if v := os.Getenv("LOCKCHECK_HEAL_VERSION"); v != "" {
		version, suffix = v, "heal-"+strings.ReplaceAll(v, ".", "")
	}
	if v, err := cluster.LookupVersion(version); err == nil && !v.ThrottlesEntireSSTables {
		t.Skipf("%s streams whole SSTables uncapped: no stream lasts long enough to kill a node inside it", version)
	}
	c := clustertest.Start(t, suffix, cluster.WithVersion(version), cluster.WithNodes(3), cluster.WithSpares(1),
		cluster.WithReplicationFactor(2), cluster.WithHeap("384M"))
	ctx := ctxFor(t, 28*time.Minute)
	ringIs := ringChecker(t, ctx, c)
	// finish completes a failed movement as the membership kinds do, and
	// checks how; reset puts the ring back to its start.
	finish := func(step string, n *cluster.Node, in bool, want string) {
		t.Helper()
		timed(t, ctx, step, func(ctx context.Context) error {
			how, err := n.Finish(ctx, in)
			if how != want {
				t.Errorf("%s: %q, want %q", step, how, want)
			}
			t.Logf("%s: %s", step, how)
			return err
		})
	}
	var start map[string]string
	reset := func(step string) {
		t.Helper()
		timed(t, ctx, step, func(ctx context.Context) error {
			changed, err := c.ResetMembership(ctx)
			if err == nil && !changed {
				t.Errorf("%s: the ring had moved and the reset changed nothing", step)
			}
			return err
		})
		ringIs("after "+step, start)
	}
	node := func(name string) *cluster.Node {
		t.Helper()
		n, err := c.Node(name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n1, n2, n3 := node("n1"), node("n2"), node("n3")
	n4 := c.Spares()[0]
	members := []*cluster.Node{n1, n2, n3}
	start = map[string]string{"n1": "UN", "n2": "UN", "n3": "UN"}
	ringIs("start", start)

	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	begin := time.Now()
	writeRows(t, ctx, s)
	for _, n := range members {
		if _, err := n.Nodetool(ctx, "flush", healKeyspace); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rows of %d bytes written at ALL and flushed in %v", healRows, healValue, since(begin))

	// Join: the bootstrap's larger source, n2, dies inside its stream.
	for _, n := range members {
		if err := n.SetStreamThroughput(ctx, joinMbit); err != nil {
			t.Fatal(err)
		}
	}
	joinBegin := time.Now()
	joinErr := make(chan error, 1)
	go func() { joinErr <- n4.Join(ctx) }()
	st := waitStream(t, ctx, n4, n2, false, joinErr)
	streamBegan := time.Now()
	t.Logf("join of n4: streaming from n2 %v after the start (%d of %d bytes)", streamBegan.Sub(joinBegin).Round(100*time.Millisecond), st.Done, st.Total)
	if err := n2.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	err = ended(t, joinErr, "join of n4")
	t.Logf("join of n4: failed %v after n2's kill (%v into the stream): %v", since(killed), killed.Sub(streamBegan).Round(100*time.Millisecond), err)
	if !errors.Is(err, cluster.ErrMovementFailed) {
		t.Fatalf("join of n4 with its source n2 killed mid-stream: %v, want %v", err, cluster.ErrMovementFailed)
	}
	stateIs(t, ctx, c, "join failed", "n4", "UJ")
	timed(t, ctx, "restart of n2", n2.Restart)
	for _, n := range []*cluster.Node{n1, n3} {
		if err := n.SetStreamThroughput(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	// 5.0 refuses the resume: the node bootstraps again
	// (Version.ResumesBootstrap).
	resumed := "bootstrap again from empty data"
	if c.Version().ResumesBootstrap {
		resumed = "nodetool bootstrap resume"
	}
	finish("finish of n4's join", n4, true, resumed)
	ringIs("after the resumed join", map[string]string{"n1": "UN", "n2": "UN", "n3": "UN", "n4": "UN"})
	readAlone(t, ctx, c, n4, n1, n2)
	reset("reset (n4 leaves)")

	// startLeave starts n2's decommission, its streams capped, and waits
	// until it streams to n3: the moment a node is killed in.
	startLeave := func() (<-chan error, cluster.Stream, time.Time) {
		t.Helper()
		if err := n2.SetStreamThroughput(ctx, leaveMbit); err != nil {
			t.Fatal(err)
		}
		begin, done := time.Now(), make(chan error, 1)
		go func() { done <- n2.Decommission(ctx) }()
		return done, waitStream(t, ctx, n2, n3, true, done), begin
	}

	// Leave: n2 decommissions, and n3, which receives its (n3, n1], dies
	// inside that stream.
	leaveErr, st, leaveBegin := startLeave()
	streamBegan = time.Now()
	t.Logf("decommission of n2: streaming to n3 %v after the start (%d of %d bytes)", streamBegan.Sub(leaveBegin).Round(100*time.Millisecond), st.Done, st.Total)
	if err := n3.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	killed = time.Now()
	err = ended(t, leaveErr, "decommission of n2")
	t.Logf("decommission of n2: failed %v after n3's kill (%v into the stream): %v", since(killed), killed.Sub(streamBegan).Round(100*time.Millisecond), err)
	if err == nil {
		t.Fatal("decommission of n2 with its receiver n3 killed mid-stream succeeded")
	}
	stateIs(t, ctx, c, "decommission failed", "n2", "UL")
	// 5.0 names the failure (DECOMMISSION_FAILED); 4.1.10 stays in mode
	// LEAVING, and its decommission run again resumes all the same.
	failedMode := map[string]string{"4.0": "LEAVING", "4.1": "LEAVING"}[c.Version().Name]
	if failedMode == "" {
		failedMode = "DECOMMISSION_FAILED"
	}
	if ns, err := n2.Netstats(ctx); err != nil {
		t.Error(err)
	} else if ns.Mode != failedMode {
		t.Errorf("n2's operation mode after its failed decommission: %q, want %s", ns.Mode, failedMode)
	}
	timed(t, ctx, "restart of n3", n3.Restart)
	if err := n2.SetStreamThroughput(ctx, 0); err != nil {
		t.Fatal(err)
	}
	finish("finish of n2's decommission", n2, false, "nodetool decommission again (it resumes)")
	ringIs("after the decommission ran again", map[string]string{"n1": "UN", "n3": "UN"})
	reset("reset (n2 bootstraps back)")

	// Leave, the leaver killed: n2 decommissions again and dies itself
	// inside its stream to n3. Its tokens are still its own, so it starts
	// again as the member it is, and Finish decommissions it once more.
	leaveErr, st, leaveBegin = startLeave()
	t.Logf("decommission of n2, to be killed: streaming to n3 %v after the start (%d of %d bytes)", since(leaveBegin), st.Done, st.Total)
	if err := n2.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ended(t, leaveErr, "decommission of the killed n2"); err == nil {
		t.Fatal("decommission of n2, killed mid-stream, succeeded")
	}
	seen(t, ctx, n1, func(ring map[string]string) bool { return ring["n2"] == "DL" }, "n2 down and leaving")
	finish("finish of the killed n2's decommission", n2, false, "restart, then decommission again")
	ringIs("after the killed leaver's decommission", map[string]string{"n1": "UN", "n3": "UN"})
	reset("reset (n2 bootstraps back again)")
	readAll(t, ctx, s, gocql.All)
}

const (
	healKeyspace = "heal"
	healRows     = 1500
	healValue    = 10 << 10 // random bytes: the SSTables do not compress them
	// joinMbit caps each member's streaming at 1 megabit (125 kB/s), the
	// smallest cap: n2 sends n4 a third of the 15 MB, about 40 s.
	joinMbit = 1
	// leaveMbit: n2 sends two thirds, to two nodes at once, about 40 s.
	leaveMbit = 2
	// stepWait bounds a restart, a heal or a reset: each took well under
	// two minutes at load 40.
	stepWait = 8 * time.Minute
)

// stateIs checks one node's state in the ring (the others' may lag: a
// killed node is seen down only when the failure detector convicts it).
func stateIs(t *testing.T, ctx context.Context, c *cluster.Cluster, step, name, want string) {
	t.Helper()
	ring, err := c.Ring(ctx)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if ring[name] != want {
		t.Fatalf("%s: ring %v, want %s %s", step, ring, name, want)
	}
	t.Logf("%s: ring %v", step, ring)
}

// ended waits for a movement started on its own to end, for as long as a
// step may take.
func ended(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(stepWait):
		t.Fatalf("%s: still moving %v after a node it streamed with was killed", what, stepWait)
		return nil
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

// timed runs one step with a bound of its own (a heal that hangs is a
// finding, said when the bound ends, not at the test's timeout) and logs
// its time.
func timed(t *testing.T, ctx context.Context, step string, f func(context.Context) error) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepWait)
	defer cancel()
	begin := time.Now()
	if err := f(sctx); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	t.Logf("%s took %v", step, since(begin))
}

// value is row k's value: random bytes of its own seed, so a read checks
// them without keeping them.
func value(k int) []byte {
	r := rand.New(rand.NewPCG(uint64(k), 22))
	b := make([]byte, healValue)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writeRows(t *testing.T, ctx context.Context, s *gocql.Session) {
	t.Helper()
	if err := cluster.CreateKeyspace(ctx, s, healKeyspace, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Query(`CREATE TABLE IF NOT EXISTS ` + healKeyspace + `.blobs (k int PRIMARY KEY, v blob)`).ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	keys := make(chan int)
	for range 4 {
		wg.Go(func() {
			for k := range keys {
				err := s.Query(`INSERT INTO `+healKeyspace+`.blobs (k, v) VALUES (?, ?)`, k, value(k)).Consistency(gocql.All).ExecContext(ctx)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("row %d: %w", k, err))
					mu.Unlock()
				}
			}
		})
	}
	for k := range healRows {
		keys <- k
	}
	close(keys)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every row back at cl and checks its value.
func readAll(t *testing.T, ctx context.Context, s *gocql.Session, cl gocql.Consistency) {
	t.Helper()
	bad := 0
	for k := range healRows {
		var v []byte
		err := s.Query(`SELECT v FROM `+healKeyspace+`.blobs WHERE k = ?`, k).Consistency(cl).ScanContext(ctx, &v)
		if err != nil || !bytes.Equal(v, value(k)) {
			if bad++; bad <= 5 {
				t.Errorf("row %d at %v: %d bytes, %v", k, cl, len(v), err)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d rows wrong at %v", bad, healRows, cl)
	}
	t.Logf("all %d rows read back at %v", healRows, cl)
}

// readAlone proves the joined node holds its ranges: with the other
// replica of each of them (others) paused and seen down by it, a read at
// ONE that it coordinates can be answered for those ranges by it alone.
// Every row is read; the rest of the ring is answered by the node left
// running.
func readAlone(t *testing.T, ctx context.Context, c *cluster.Cluster, joined *cluster.Node, others ...*cluster.Node) {
	t.Helper()
	for _, o := range others {
		clustertest.Pause(t, ctx, o.Name, o)
	}
	defer func() {
		for _, o := range others {
			if err := o.Unpause(context.WithoutCancel(ctx)); err != nil {
				t.Error(err)
			}
		}
		seen(t, ctx, joined, func(ring map[string]string) bool {
			for _, st := range ring {
				if st != "UN" {
					return false
				}
			}
			return true
		}, "every node up again")
	}()
	seen(t, ctx, joined, func(ring map[string]string) bool {
		for _, o := range others {
			if ring[o.Name] != "DN" {
				return false
			}
		}
		return true
	}, "the paused nodes down")
	ps, err := c.PinnedSession(ctx, joined)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	readAll(t, ctx, ps, gocql.One)
}

// seen waits until n's own view of the ring satisfies ok.
func seen(t *testing.T, ctx context.Context, n *cluster.Node, ok func(map[string]string) bool, what string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var ring map[string]string
	var err error
	for {
		if ring, err = n.RingSeen(wctx); err == nil && ok(ring) {
			return
		}
		select {
		case <-wctx.Done():
			t.Fatalf("%s never saw %s: ring %v, %v", n.Name, what, ring, err)
		case <-time.After(time.Second):
		}
	}
}

// waitStream waits until n has a stream with peer that still has bytes to
// move (sending or receiving), as its netstats say: the movement is inside
// its streaming. A movement that ends first (done) fails the test: the
// stream was too short to kill a node in.
func waitStream(t *testing.T, ctx context.Context, n, peer *cluster.Node, sending bool, done <-chan error) cluster.Stream {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	var last cluster.Netstats
	for {
		select {
		case err := <-done:
			t.Fatalf("%s's movement ended before a stream with %s was seen (netstats %+v): %v", n.Name, peer.Name, last, err)
		case <-wctx.Done():
			t.Fatalf("%s: no stream with %s (netstats %+v): %v", n.Name, peer.Name, last, wctx.Err())
		default:
		}
		if ns, err := n.Netstats(wctx); err == nil {
			last = ns
			for _, s := range ns.Streams {
				if s.Peer == peer.IP && s.Sending == sending && s.Active() {
					return s
				}
			}
		}
		select {
		case <-wctx.Done():
		case <-time.After(time.Second):
		}
	}
}
