package main

import (
	"container/heap"
	"encoding/binary"
	"math/rand/v2"
	"time"
)

// flow is what keeps packets in order: protocol, addresses and ports (the
// ports left zero for a protocol without them, or a fragment).
type flow struct {
	proto            byte
	src, dst         [4]byte
	srcPort, dstPort uint16
}

// flowOf reads an IPv4 packet's flow; anything else is one flow of its own
// (the zero flow), which keeps it in order with the rest of its kind.
func flowOf(p []byte) flow {
	if len(p) < 20 || p[0]>>4 != 4 {
		return flow{}
	}
	var f flow
	f.proto = p[9]
	copy(f.src[:], p[12:16])
	copy(f.dst[:], p[16:20])
	ihl := int(p[0]&0x0f) * 4
	fragOff := binary.BigEndian.Uint16(p[6:8]) & 0x1fff
	if (f.proto == 6 || f.proto == 17) && fragOff == 0 && len(p) >= ihl+4 {
		f.srcPort = binary.BigEndian.Uint16(p[ihl : ihl+2])
		f.dstPort = binary.BigEndian.Uint16(p[ihl+2 : ihl+4])
	}
	return f
}

// holder decides when each packet leaves: its arrival plus the delay plus a
// uniform draw in [-jitter, jitter], but never before the packet before it
// in its flow.
type holder struct {
	delay, jitter time.Duration
	rnd           *rand.Rand
	last          map[flow]time.Time
	n             int
}

func newHolder(delay, jitter time.Duration, seed int64) *holder {
	return &holder{delay: delay, jitter: jitter, rnd: rand.New(rand.NewPCG(uint64(seed), 0x5ca1ab1e)), last: map[flow]time.Time{}}
}

// due is when a packet of f that arrived at now leaves.
func (h *holder) due(now time.Time, f flow) time.Time {
	d := h.delay
	if h.jitter > 0 {
		d += time.Duration(h.rnd.Int64N(int64(2*h.jitter)+1)) - h.jitter
	}
	at := now.Add(d)
	if prev, ok := h.last[f]; ok && at.Before(prev) {
		at = prev
	}
	h.last[f] = at
	// Flows whose last packet left long ago are forgotten, so that the map
	// stays the size of the flows in flight.
	if h.n++; h.n%4096 == 0 {
		for k, t := range h.last {
			if t.Before(now) {
				delete(h.last, k)
			}
		}
	}
	return at
}

// held is a packet waiting for its verdict.
type held struct {
	id  uint32
	due time.Time
	seq uint64
}

// heldQueue orders held packets by due time, then by arrival.
type heldQueue struct {
	h   heldHeap
	seq uint64
}

func (q *heldQueue) Len() int { return len(q.h) }
func (q *heldQueue) push(p held) {
	q.seq++
	p.seq = q.seq
	heap.Push(&q.h, p)
}
func (q *heldQueue) peek() held { return q.h[0] }
func (q *heldQueue) pop() held  { return heap.Pop(&q.h).(held) }

type heldHeap []held

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(held)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
