package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// Election is leadership election per group with expiring columns, after the
// paradoxical library of seed 002:
//
//	CREATE TABLE leadership_election ("group" text PRIMARY KEY, leader_id text)
//	claim      INSERT INTO leadership_election ("group", leader_id) VALUES (?, ?) IF NOT EXISTS USING TTL ?
//	heartbeat  UPDATE leadership_election USING TTL ? SET leader_id = ? WHERE "group" = ? IF leader_id = ?
//	relinquish DELETE FROM leadership_election WHERE "group" = ? IF leader_id = ?
//
// As published, a claim by the identity that already leads returns a token
// without refreshing the TTL: the caller believes it got a fresh term while
// the old one may be about to expire. WithRefreshOnReclaim heartbeats in
// that case instead (the fix).
type Election struct {
	s                *gocql.Session
	cfg              config
	table            string
	group, leader    string
	refreshOnReclaim bool
}

// ElectionOption configures an Election beyond the shared options.
type ElectionOption func(*Election)

// WithColumns names the group and leader columns (default "group", "leader_id").
func WithColumns(group, leader string) ElectionOption {
	return func(e *Election) { e.group, e.leader = group, leader }
}

// WithRefreshOnReclaim makes a re-entrant claim refresh the TTL.
func WithRefreshOnReclaim(on bool) ElectionOption {
	return func(e *Election) { e.refreshOnReclaim = on }
}

// NewElection returns an election over the table "leadership_election" (or
// WithTable). A table or column name that is not a plain CQL identifier is
// an error.
func NewElection(s *gocql.Session, opts []Option, eopts ...ElectionOption) (*Election, error) {
	c, table, err := newConfig("leadership_election", opts)
	if err != nil {
		return nil, err
	}
	e := &Election{s: s, cfg: c, table: table, group: "group", leader: "leader_id"}
	for _, o := range eopts {
		o(e)
	}
	if e.group, err = recipe.Ident(e.group); err != nil {
		return nil, fmt.Errorf("election: group column: %w", err)
	}
	if e.leader, err = recipe.Ident(e.leader); err != nil {
		return nil, fmt.Errorf("election: leader column: %w", err)
	}
	return e, nil
}

// CreateTable creates the election's table with its configured names.
func (e *Election) CreateTable(ctx context.Context) error {
	q := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (%s text PRIMARY KEY, %s text)`, e.table, e.group, e.leader)
	if err := e.s.Query(q).ExecContext(ctx); err != nil {
		return fmt.Errorf("election schema: %w", err)
	}
	return e.s.AwaitSchemaAgreement(ctx)
}

// Token is a claimed leadership, to heartbeat at about half its TTL.
type Token struct {
	Group, Identity string
	TTL             time.Duration
	// Deadline is when the term ends on the process's monotonic clock,
	// counted from the claim's (or heartbeat's) invocation minus the margin.
	// On a re-entrant claim as published it is a guess: the real term is
	// older.
	Deadline time.Time
}

// TryClaim claims leadership of group for ttl. It returns a *HeldError
// (ErrHeldByOther) when another identity leads and wraps ErrUnknown when the
// claim's outcome is unknown.
func (e *Election) TryClaim(ctx context.Context, group, identity string, ttl time.Duration) (Token, error) {
	start := time.Now()
	tok := Token{Group: group, Identity: identity, TTL: time.Duration(ttlSeconds(ttl)) * time.Second,
		Deadline: start.Add(validity(ttl, e.cfg.margin))}
	cur := map[string]any{}
	q := fmt.Sprintf(`INSERT INTO %s (%s, %s) VALUES (?, ?) IF NOT EXISTS USING TTL ?`, e.table, e.group, e.leader)
	applied, err := workload.LWT(e.s.Query(q, group, identity, ttlSeconds(ttl))).MapScanCASContext(ctx, cur)
	if err != nil {
		return Token{}, fmt.Errorf("claim %q: %w", group, workload.ClassifyLWT(err))
	}
	if applied {
		return tok, nil
	}
	leader, _ := cur[unquote(e.leader)].(string)
	if leader != identity {
		return Token{}, &HeldError{Lock: group, Holder: leader}
	}
	if !e.refreshOnReclaim {
		return tok, nil // as published: no refresh, the flaw
	}
	return e.Heartbeat(ctx, tok)
}

// Heartbeat renews the term; ErrNotHeld when the identity no longer leads.
func (e *Election) Heartbeat(ctx context.Context, tok Token) (Token, error) {
	start := time.Now()
	q := fmt.Sprintf(`UPDATE %s USING TTL ? SET %s = ? WHERE %s = ? IF %s = ?`, e.table, e.leader, e.group, e.leader)
	applied, err := workload.LWT(e.s.Query(q, ttlSeconds(tok.TTL), tok.Identity, tok.Group, tok.Identity)).
		MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return tok, fmt.Errorf("heartbeat %q: %w", tok.Group, workload.ClassifyLWT(err))
	}
	if !applied {
		return tok, fmt.Errorf("heartbeat %q by %q: %w", tok.Group, tok.Identity, workload.ErrNotHeld)
	}
	tok.Deadline = start.Add(validity(tok.TTL, e.cfg.margin))
	return tok, nil
}

// Relinquish gives leadership up; ErrNotHeld when the identity no longer leads.
func (e *Election) Relinquish(ctx context.Context, tok Token) error {
	q := fmt.Sprintf(`DELETE FROM %s WHERE %s = ? IF %s = ?`, e.table, e.group, e.leader)
	applied, err := workload.LWT(e.s.Query(q, tok.Group, tok.Identity)).MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return fmt.Errorf("relinquish %q: %w", tok.Group, workload.ClassifyLWT(err))
	}
	if !applied {
		return fmt.Errorf("relinquish %q by %q: %w", tok.Group, tok.Identity, workload.ErrNotHeld)
	}
	return nil
}

// Status is who leads a group and for how long yet.
type Status struct {
	Group, Leader string // Leader "" = none
	TimeLeft      time.Duration
}

// Status reads the group's leader at SERIAL.
func (e *Election) Status(ctx context.Context, group string) (Status, error) {
	var (
		leader *string
		ttl    *int
	)
	q := fmt.Sprintf(`SELECT %s, ttl(%s) FROM %s WHERE %s = ?`, e.leader, e.leader, e.table, e.group)
	err := e.s.Query(q, group).Consistency(gocql.Serial).ScanContext(ctx, &leader, &ttl)
	st := Status{Group: group}
	if errors.Is(err, gocql.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("status %q: %w", group, workload.ClassifyRead(err))
	}
	if leader != nil {
		st.Leader = *leader
	}
	if ttl != nil {
		st.TimeLeft = time.Duration(*ttl) * time.Second
	}
	return st, nil
}

func unquote(q string) string { return q[1 : len(q)-1] }
