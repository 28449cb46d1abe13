package consumer

import (
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/token"
)

// consumeStream is one Consume's hold on the consumer: the leases it handed
// out that are not settled yet, which bound what it may pull next. Only its
// own methods, here, take its lock.
type consumeStream struct {
	mu     sync.Mutex
	held   map[uint64]*heldLease // by stream sequence
	bytes  int64
	credit chan struct{} // a lease left: room to pull again
}

type heldLease struct {
	// d is the delivery as a Nak needs it: its metadata, and its deadline,
	// which follows Extends. The message itself is the caller's once sent:
	// kept here, it would hold every byte of every unsettled message.
	d       *Delivery
	claims  token.Claims
	size    int64
	started time.Time // handed out; auto_extend stops at started + max lease
}

func newConsumeStream() *consumeStream {
	return &consumeStream{held: make(map[uint64]*heldLease), credit: make(chan struct{}, 1)}
}

func (s *consumeStream) add(d *Delivery, cl token.Claims, now time.Time) {
	size := d.size()
	kept := &Delivery{Meta: d.Meta, Deadline: d.Deadline}
	s.mu.Lock()
	if old, ok := s.held[cl.StreamSeq]; ok {
		s.bytes -= old.size // a redelivery to the same stream
	}
	s.held[cl.StreamSeq] = &heldLease{d: kept, claims: cl, size: size, started: now}
	s.bytes += size
	s.mu.Unlock()
}

// drop forgets the lease of delivery (seq, delivered) and signals credit.
func (s *consumeStream) drop(seq, delivered uint64) {
	s.mu.Lock()
	if h, ok := s.held[seq]; ok && h.claims.Delivered == delivered {
		delete(s.held, seq)
		s.bytes -= h.size
	}
	s.mu.Unlock()
	select {
	case s.credit <- struct{}{}:
	default:
	}
}

// load is how many leases the stream holds, and their bytes.
func (s *consumeStream) load() (n int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held), s.bytes
}

// untilNextDue is how long until a held lease needs attention: lead before
// its deadline (its extension; lead nil: at its deadline, when its credit
// returns).
func (s *consumeStream) untilNextDue(lead func(delivered uint64) time.Duration, now time.Time) time.Duration {
	next := time.Hour
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.held {
		at := h.claims.Deadline
		if lead != nil {
			at = at.Add(-lead(h.claims.Delivered))
		}
		next = min(next, at.Sub(now))
	}
	return max(next, 10*time.Millisecond)
}

// expire forgets the leases past their deadline (the server redelivers those
// messages) and returns their sequences.
func (s *consumeStream) expire(now time.Time) (gone []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq, h := range s.held {
		if !now.Before(h.claims.Deadline) {
			gone = append(gone, seq)
			delete(s.held, seq)
			s.bytes -= h.size
		}
	}
	return gone
}

// dueForExtension are the leases whose deadline is within lead, unless they
// have been held for maxLease.
func (s *consumeStream) dueForExtension(lead func(delivered uint64) time.Duration, maxLease time.Duration, now time.Time) []token.Claims {
	var due []token.Claims
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.held {
		if h.claims.Deadline.Sub(now) <= lead(h.claims.Delivered) && now.Sub(h.started) < maxLease {
			due = append(due, h.claims)
		}
	}
	return due
}

// extended moves the deadline of delivery cl, if the stream still holds it.
func (s *consumeStream) extended(cl token.Claims, deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.held[cl.StreamSeq]; ok && h.claims.Delivered == cl.Delivered {
		h.claims.Deadline = deadline
		h.d.Deadline = deadline
	}
}

// dropBefore forgets the leases handed out before t, signals credit, and
// returns their sequences.
func (s *consumeStream) dropBefore(t time.Time) (gone []uint64) {
	s.mu.Lock()
	for seq, h := range s.held {
		if h.started.Before(t) {
			gone = append(gone, seq)
			delete(s.held, seq)
			s.bytes -= h.size
		}
	}
	s.mu.Unlock()
	if len(gone) > 0 {
		select {
		case s.credit <- struct{}{}:
		default:
		}
	}
	return gone
}

// release lets go of every held lease and returns them.
func (s *consumeStream) release() (seqs []uint64, ds []*Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq, h := range s.held {
		seqs = append(seqs, seq)
		ds = append(ds, h.d)
	}
	s.held, s.bytes = map[uint64]*heldLease{}, 0
	return seqs, ds
}
