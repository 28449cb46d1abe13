package consumer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
)

// Counts are what a consumer has done since it was bound, in a few words
// that the metrics collector reads when scraped: a Prometheus series of each
// would cost the idle consumer a kilobyte.
type Counts struct {
	Since   time.Time
	Fetched atomic.Uint64                     // messages leased, by Fetch and Consume
	Empty   [emptyReasons]atomic.Uint64       // Fetches that returned none, by EmptyReason
	Orphans [orphanOutcomes]atomic.Uint64     // by OrphanOutcome
	Settled [lease.OpExtend + 1]atomic.Uint64 // tokens settled, by lease.Op (callers' and the pusher's)
	Resets  atomic.Uint64                     // consumer resets noticed (each voids the leases held)
	// PolicyChanges counts the changes of the consumer's redelivery timing
	// or limits seen on the server (Consumer.policyChanged).
	PolicyChanges atomic.Uint64
	// DrainsGivenUp counts the waits of a reset for the settles sent before
	// its void that gave up, one the server left unanswered (inFlight.drain):
	// the reset's deliveries went out with it still in flight.
	DrainsGivenUp atomic.Uint64
	mu            sync.Mutex               // guards failed
	failed        map[SettleFailure]uint64 // tokens not settled, by op and reason
}

const emptyReasons = EmptyBelowMinPending + 1

// OrphanOutcome is what became of messages whose caller had gone.
type OrphanOutcome int

// The outcomes, with the names the metrics give them.
const (
	OrphanHanded   OrphanOutcome = iota // a canceled Fetch's, handed to the next Fetch
	OrphanNaked                         // a canceled Fetch's, nak'ed back
	OrphanReturned                      // an ended Consume's unsettled leases, nak'ed back
	orphanOutcomes
)

// OrphanOutcomes are the outcomes' names.
var OrphanOutcomes = [orphanOutcomes]string{"handed", "naked", "consume_returned"}

// SettleFailure is a kind of token a settle failed for.
type SettleFailure struct {
	Op     lease.Op
	Reason string // the error's reason (errs.Reason)
}

// CountSettles counts a batch's outcomes.
func (k *Counts) CountSettles(op lease.Op, outs []settle.Outcome) {
	ok := 0
	for _, o := range outs {
		if o.Err == nil {
			ok++
		}
	}
	k.Settled[op].Add(uint64(ok))
	if ok == len(outs) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failed == nil {
		k.failed = make(map[SettleFailure]uint64)
	}
	for _, o := range outs {
		if o.Err != nil {
			k.failed[SettleFailure{op, errs.Reason(o.Err)}]++
		}
	}
}

// Failed are the tokens not settled so far, by op and reason; nil when
// none failed (most consumers, scraped every few seconds).
func (k *Counts) Failed() map[SettleFailure]uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.failed) == 0 {
		return nil
	}
	out := make(map[SettleFailure]uint64, len(k.failed))
	for f, n := range k.failed {
		out[f] = n
	}
	return out
}
