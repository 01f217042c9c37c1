package main

import (
	"testing"
	"time"
)

// A flow's packets leave in the order they came whatever the jitter draws,
// each held at least delay-jitter and at most delay+jitter after the one
// before it left (no wall clock: the times are given).
func TestHolderKeepsFlowOrder(t *testing.T) {
	h := newHolder(100*time.Millisecond, 80*time.Millisecond, 7)
	t0 := time.Unix(1000, 0)
	a := packet(6, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 40000, 7000)
	b := packet(6, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 3}, 40001, 7000)
	var lastA time.Time
	spread := map[bool]bool{}
	for i := range 500 {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		due := h.due(now, flowOf(a))
		if due.Before(lastA) {
			t.Fatalf("packet %d of flow a leaves at %v, before the one before it (%v)", i, due, lastA)
		}
		lastA = due
		if d := due.Sub(now); d < 20*time.Millisecond {
			t.Fatalf("packet %d held %v, under delay-jitter", i, d)
		}
		// Flow b's packets are far apart: none waits for the one before.
		nb := t0.Add(time.Duration(i) * time.Second)
		db := h.due(nb, flowOf(b))
		spread[db.Sub(nb) < 100*time.Millisecond] = true
		if d := db.Sub(nb); d > 180*time.Millisecond || d < 20*time.Millisecond {
			t.Fatalf("packet %d of flow b held %v, outside delay±jitter", i, d)
		}
	}
	if len(spread) != 2 {
		t.Errorf("jitter never drew both below and above the delay: %v", spread)
	}
}

func TestFlowOf(t *testing.T) {
	p := packet(6, [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 40000, 7000)
	f := flowOf(p)
	if f.proto != 6 || f.srcPort != 40000 || f.dstPort != 7000 || f.dst != [4]byte{10, 0, 0, 2} {
		t.Errorf("flowOf = %+v", f)
	}
	if got := flowOf([]byte{0x60, 0, 0}); got != (flow{}) {
		t.Errorf("a short non-IPv4 packet is flow %+v, want the zero flow", got)
	}
}

func TestHeldQueueOrder(t *testing.T) {
	var q heldQueue
	t0 := time.Unix(0, 0)
	for i, d := range []int{30, 10, 20, 10} {
		q.push(held{id: uint32(i), due: t0.Add(time.Duration(d))})
	}
	var got []uint32
	for q.Len() > 0 {
		got = append(got, q.pop().id)
	}
	want := []uint32{1, 3, 2, 0} // by due, ties by arrival
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("release order %v, want %v", got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		delay, jitter time.Duration
		ok            bool
	}{{100, 0, true}, {100, 100, true}, {0, 0, false}, {-1, 0, false}, {100, 101, false}, {100, -1, false}} {
		if err := validate(1, tt.delay, tt.jitter); (err == nil) != tt.ok {
			t.Errorf("validate(%v, %v) = %v, want ok %v", tt.delay, tt.jitter, err, tt.ok)
		}
	}
}

func packet(proto byte, src, dst [4]byte, sport, dport uint16) []byte {
	p := make([]byte, 40)
	p[0] = 0x45
	p[9] = proto
	copy(p[12:], src[:])
	copy(p[16:], dst[:])
	p[20], p[21] = byte(sport>>8), byte(sport)
	p[22], p[23] = byte(dport>>8), byte(dport)
	return p
}
