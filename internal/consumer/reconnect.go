package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
)

// A replica hears what changes a consumer (an operator's update, a delete
// and a create under the same name, a reset) as it passes on NATS: its
// requests and advisories. While the replica's connection is down, they
// pass unheard. So after each reconnect, the consumer asks the server for
// its info before its next settle or pull (current): the view takes the
// policy as it is now, a later creation time voids the leases of the
// consumer that was deleted (resetWatch.remade), fewer deliveries than the
// replica received shows a reset (resetWatch.informed), and a consumer that
// is gone is deleted (markDeleted); Consumer.Reconnected counts the
// reconnects. A reset followed by at least as many deliveries as the
// replica had received is not seen so; its settles are judged by the
// reset's record in the ledger, where another replica heard it.

// current returns once the consumer's info has been asked since the last
// reconnect (one question at a time; the callers after it wait for its
// answer), or UNAVAILABLE when it cannot be.
func current(ctx context.Context, s *onServer) error {
	n := s.reconnects.Load()
	if s.informed.Load() >= n {
		return nil
	}
	s.asked.Lock()
	defer s.asked.Unlock()
	if s.informed.Load() >= n {
		return nil
	}
	_, err := s.ask(ctx, s.timeout)
	switch {
	case gone(err):
		markDeleted(s, "the consumer is gone from the server, deleted while NATS was away")
	case err != nil:
		return fmt.Errorf("%w: asking the server for consumer %q of stream %q after a reconnect: %v", errs.ErrUnavailable, s.name, s.stream, err)
	}
	s.informed.Store(n)
	return nil
}

// currentSoon has current asked at once, on a goroutine of the words',
// for a consumer that holds leases, rather than at their next settle: what
// a reset left shows best before its deliveries are made.
func currentSoon(s *onServer) {
	s.words.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		_ = current(ctx, s)
	})
}

// settleable is current, then, for a consumer the server said was deleted,
// CONSUMER_NOT_FOUND while it still is (deletedNow): what a settle asks
// first.
func settleable(ctx context.Context, s *onServer) error {
	if err := current(ctx, s); err != nil {
		return err
	}
	return deletedNow(ctx, s)
}

// markDeleted takes the server's word that the consumer was deleted (its advisory,
// or an info after a reconnect): its leases are void, as a reset voids
// them, and a settle asks the server and ends NOT_FOUND (deletedNow).
func markDeleted(s *onServer, why string) {
	ticket := s.tickets.Add(1) // an info asked before it does not clear it
	s.update(func(v *serverView) { v.deleted, v.ticket = true, ticket })
	s.resets.gone()
	shareReset(s)
	s.log.Warn(why + ": the leases this replica held are void")
}

// made is when the consumer served was made, as the server last said: a
// token that started before it is of a consumer deleted since, whose delete
// no replica may have heard (every one of them stopped, or away), and
// settles nothing of this one (settler.Adopt). It is the server's clock
// against the issuer's, as a reset's record is one replica's against
// another's.
func (w *resetWatch) made() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.created
}
