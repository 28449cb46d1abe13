package consumer

import (
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/token"
)

// streamOwners finds the Consume stream holding a lease, so that a settle
// (made through any replica, and so here, at the issuer) gives its credit
// back. Its lock is never held with a stream's.
type streamOwners struct {
	mu     sync.Mutex
	owners map[uint64]owner // by stream sequence
}

// owner is the stream holding a message and which delivery of it it holds.
type owner struct {
	s         *consumeStream
	delivered uint64
}

func (so *streamOwners) own(s *consumeStream, seq, delivered uint64) {
	so.mu.Lock()
	if so.owners == nil {
		so.owners = make(map[uint64]owner)
	}
	so.owners[seq] = owner{s, delivered}
	so.mu.Unlock()
}

// settled gives back the credit of the stream that holds delivery (seq,
// delivered). A settle of another delivery of the message leaves its owner
// alone: a Nak's confirmation (the orphan pool's, or a Fetch caller's) can
// come after the redelivery it caused has reached a stream, and taking that
// stream's entry would lose the credit of the redelivery's own settle.
func (so *streamOwners) settled(seq, delivered uint64) {
	so.mu.Lock()
	o, ok := so.owners[seq]
	ok = ok && o.delivered == delivered
	if ok {
		delete(so.owners, seq)
	}
	so.mu.Unlock()
	if ok {
		o.s.drop(seq, delivered)
	}
}

// extended moves the deadline of delivery (seq, delivered) in the stream
// that holds it.
func (so *streamOwners) extended(seq, delivered uint64, deadline time.Time) {
	so.mu.Lock()
	o, ok := so.owners[seq]
	so.mu.Unlock()
	if ok && o.delivered == delivered {
		o.s.extended(token.Claims{StreamSeq: seq, Delivered: delivered}, deadline)
	}
}

func (so *streamOwners) forget(s *consumeStream, seqs []uint64) {
	so.mu.Lock()
	for _, seq := range seqs {
		if so.owners[seq].s == s {
			delete(so.owners, seq)
		}
	}
	so.mu.Unlock()
}

// dropBefore lets go of every lease the streams took before t, giving
// their credit back: after a consumer reset those leases are void.
func (so *streamOwners) dropBefore(t time.Time) {
	so.mu.Lock()
	streams := make(map[*consumeStream]struct{})
	for _, o := range so.owners {
		streams[o.s] = struct{}{}
	}
	so.mu.Unlock()
	for s := range streams {
		so.forget(s, s.dropBefore(t))
	}
}
