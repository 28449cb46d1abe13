package consumer

import (
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/token"
)

// stream is one Consume's hold on the consumer: the leases it handed out
// and that are not settled yet, which bound what it may pull next.
type stream struct {
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

func (s *stream) add(d *Delivery, cl token.Claims, now time.Time) {
	size := d.size()
	kept := &Delivery{Meta: d.Meta, Deadline: d.Deadline}
	s.mu.Lock()
	s.held[cl.StreamSeq] = &heldLease{d: kept, claims: cl, size: size, started: now}
	s.bytes += size
	s.mu.Unlock()
}

// drop forgets the lease of delivery (seq, delivered) and signals credit.
func (s *stream) drop(seq, delivered uint64) {
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

func (s *stream) load() (n int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held), s.bytes
}

// streams finds the Consume stream holding a lease, so that a settle (made
// through any replica, and so here, at the issuer) gives its credit back.
// Its lock is never held with a stream's.
type streams struct {
	mu     sync.Mutex
	owners map[uint64]owner // by stream sequence
}

// owner is the stream holding a message and which delivery of it it holds.
type owner struct {
	s         *stream
	delivered uint64
}

func (ss *streams) own(s *stream, seq, delivered uint64) {
	ss.mu.Lock()
	if ss.owners == nil {
		ss.owners = make(map[uint64]owner)
	}
	ss.owners[seq] = owner{s, delivered}
	ss.mu.Unlock()
}

// settled gives back the credit of the stream that holds delivery (seq,
// delivered). A settle of another delivery of the message leaves its owner
// alone: a Nak's confirmation (the orphan pool's, or a Fetch caller's) can
// come after the redelivery it caused has reached a stream, and taking that
// stream's entry would lose the credit of the redelivery's own settle.
func (ss *streams) settled(seq, delivered uint64) {
	ss.mu.Lock()
	o, ok := ss.owners[seq]
	ok = ok && o.delivered == delivered
	if ok {
		delete(ss.owners, seq)
	}
	ss.mu.Unlock()
	if ok {
		o.s.drop(seq, delivered)
	}
}

func (ss *streams) forget(s *stream, seqs []uint64) {
	ss.mu.Lock()
	for _, seq := range seqs {
		if ss.owners[seq].s == s {
			delete(ss.owners, seq)
		}
	}
	ss.mu.Unlock()
}
