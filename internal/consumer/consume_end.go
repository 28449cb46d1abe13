package consumer

import (
	"fmt"
	"slices"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
)

// How a Consume stream ends: what becomes of its leases, and a caller gone
// silent.

// end lets go of the stream's leases. When its caller left (ctx
// ended), they are given back: to be nak'ed once the stream's last pull has
// ended (while open, it would take a nak'ed message straight back), so that
// they are redelivered at once rather than after ack_wait. When the stream
// ended for another reason (the gateway's stop, NATS went away), the caller
// may still be working on them: they stay its own until their deadlines
// (but for those no token of its settles, pastTheirTokens), or are kept
// alive for keep.
func (k *consumeStream) end(callerLeft bool, last *pull.Pull, keep time.Duration, stoppedAutoExtend bool) {
	pl := k.pl
	now := time.Now()
	var until time.Time
	if keep > 0 && !callerLeft {
		until = now.Add(keep)
	}
	ls := pl.leases.Disown(k.o, until)
	if !until.IsZero() && len(ls) > 0 {
		pl.wake() // the issuer keeps them alive (Run)
	}
	switch {
	case !callerLeft && !until.IsZero():
		return // the issuer keeps them alive
	case !callerLeft:
		ls = pastTheirTokens(ls, stoppedAutoExtend, now) // the rest stay the caller's
	}
	if len(ls) == 0 {
		return
	}
	ds := make([]*Delivery, len(ls))
	for i, l := range ls {
		ds[i] = &Delivery{
			Meta:     pull.Metadata{StreamSeq: l.StreamSeq, ConsumerSeq: l.ConsumerSeq, Delivered: l.Delivered},
			Deadline: l.TokenDeadline(), // only its nak names it
		}
	}
	pl.counts.Orphans[OrphanReturned].Add(uint64(len(ds)))
	pl.orphans.giveBack(ds, last, now)
	pl.wake()
}

// pastTheirTokens are the leases of ls, left to a caller still there as the
// gateway stops (stoppedAutoExtend: an auto_extend stream the stop ended),
// that no replica would settle on the caller's tokens once this one is
// gone: auto_extend kept them alive past the deadline of the latest token
// the caller holds (its keep-alive gives the caller none), and a replica
// acting on that token alone refuses it (a reviewer's finding). They are
// given back; the rest stay the caller's. A stream ended otherwise (NATS
// away) leaves them all: their issuer, still there, settles those tokens.
func pastTheirTokens(ls []lease.Lease, stoppedAutoExtend bool, now time.Time) []lease.Lease {
	if !stoppedAutoExtend {
		return nil
	}
	return slices.DeleteFunc(ls, func(l lease.Lease) bool { return l.CallerToken().After(now) })
}

// silent ends the stream, its leases to go back at once, once its caller
// settled and extended none of the messages it holds for silence, or let
// them lapse unsettled twice in a row (lease.Table.Silent); 0: never.
func (k *consumeStream) silent(silence time.Duration, now time.Time) error {
	s, lapses := k.pl.leases.Silent(k.o, now)
	if silence == 0 || s < silence && lapses < 2 {
		return nil
	}
	k.sendFailed = true
	if s < silence {
		return fmt.Errorf("%w: the caller let the messages it held lapse unsettled twice in a row, with no settle or extend between", errs.CallerSilent)
	}
	return fmt.Errorf("%w: the caller settled and extended none of the messages it holds for %v", errs.CallerSilent, s.Round(time.Second))
}
