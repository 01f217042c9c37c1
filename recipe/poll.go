package recipe

import (
	"context"
	"math/rand/v2"
	"time"
)

// Poller waits between the attempts of a blocking acquire with jittered
// exponential backoff, so that contending clients spread out instead of
// hitting the lock's partition in step.
type Poller struct{ cur, max time.Duration }

// NewPoller starts at the options' MinPoll and doubles up to MaxPoll.
func NewPoller(o Options) *Poller {
	return &Poller{cur: max(o.MinPoll, time.Microsecond), max: o.MaxPoll}
}

// Wait sleeps a jittered [cur/2, cur] and doubles cur; it returns ctx's
// error when ctx ends first.
func (p *Poller) Wait(ctx context.Context) error {
	d := p.cur/2 + rand.N(p.cur/2+1)
	p.cur = min(p.cur*2, p.max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
