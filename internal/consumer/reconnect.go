package consumer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/settle"
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
// replica had received is not seen so: the ledger's record of the resets
// is read too (resetRecords), and one written since the replica last read
// it voids its leases.
//
// The replica's own connection may stay up while JetStream is out of its
// reach: the link of its leaf node to the hub is down, or the hub
// restarts. Whatever passes meanwhile is lost as well, with no reconnect
// to tell. So a request to JetStream that finds no responders or goes
// unanswered marks the consumer away too (away, and the replica's roster
// renewals, which end such a spell within a renewal or two however idle
// the replica is).

// away marks the consumer as if its connection had dropped and come back
// (Reconnected counts it): JetStream did not answer a request, so what
// passed meanwhile may have gone unheard.
func away(s *onServer) { s.reconnects.Add(1) }

// current returns once the consumer's info, and the ledger's record of its
// resets, have been read since the last reconnect or spell away (one
// question at a time; the callers after it wait for its answer), or
// UNAVAILABLE when they cannot be.
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
	default:
		if err := missedResets(ctx, s); err != nil {
			return err
		}
	}
	s.informed.Store(n)
	return nil
}

// recordSkew covers the clocks of two servers (the consumer's, the
// ledger's) where the first read of the reset record compares their times.
const recordSkew = 10 * time.Second

// resetRecords is what the replica knew of the ledger's record of the
// consumer's resets (settle.Ledger.RecordReset) when it last read it,
// under asked. Every write of the record raises its revision, so a
// revision above the one read last is a reset recorded since, whichever
// replica's clock says what: the replica may have been away when it was
// made, and voids its leases (voiding a lease taken after the reset costs
// a redelivery; settling one from before it lands on another caller's
// delivery). Before the first read, a record the server stored before the
// consumer was bound here (less recordSkew) is of a reset before every
// lease.
type resetRecords struct {
	read    func(ctx context.Context) (settle.ResetRecord, error) // nil: no ledger
	since   time.Time                                             // the server's time at the bind (its info's)
	rev     uint64                                                // the revision read last
	checked bool                                                  // rev was read
}

// missed reports whether rec may hold a reset made since the last read,
// and takes it as read.
func (r *resetRecords) missed(rec settle.ResetRecord) bool {
	was, checked := r.rev, r.checked
	r.rev, r.checked = max(r.rev, rec.Rev), true
	switch {
	case rec.Rev == 0:
		return false
	case checked:
		return rec.Rev > was
	}
	return r.since.IsZero() || !rec.Stored.Before(r.since.Add(-recordSkew))
}

// missedResets reads the ledger's record of the consumer's resets after a
// spell away (under asked), and voids every lease as a reset does where
// one was recorded since it was last read. Its peers heard it from the
// replica that recorded it: no word is said.
func missedResets(ctx context.Context, s *onServer) error {
	if s.records.read == nil {
		return nil
	}
	rec, err := s.records.read(ctx)
	if err != nil {
		return fmt.Errorf("%w: reading the ledger's record of consumer %q's resets after a reconnect: %v", errs.ErrUnavailable, s.name, err)
	}
	if s.records.missed(rec) && s.resets.noticeID("") {
		s.log.Warn("a reset of the consumer was recorded while this replica may not have heard it (NATS or JetStream was away): the leases this replica held are void",
			"recorded_at", rec.At)
	}
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

// gone voids every lease, as a reset does, for a consumer the server
// deleted: what it delivered is gone with it, and a settle of it would land
// on a delivery of the consumer made again under its name.
func (w *resetWatch) gone() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noticeLocked(true)
	w.unclaimed, w.deleted = 0, true
}

// remade reports whether an info's created, later than the one known, shows
// the consumer deleted and made again unnoticed (its advisory missed), and
// voids every lease then.
func (w *resetWatch) remade(created time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case created.IsZero() || !created.After(w.created): // the same, or an info answered late
		return false
	case w.created.IsZero() || w.deleted:
		w.created, w.deleted = created, false
		return false
	}
	w.created = created
	w.noticeLocked(true)
	w.unclaimed = 0
	return true
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

// where is the server the replica's connection is on, for the timing.
type where struct {
	name string
	// standalone: the server holds, itself and not clustered, the
	// JetStream reached through the consumer's API prefix; a consumer of it
	// has no leader named (viewOf: standaloneHost).
	standalone bool
}

// connectedTo is where nc is connected now (nil: unknown), for a consumer
// reached through api (its JetStream API prefix).
func connectedTo(nc *nats.Conn, api string) *where {
	name := serverName(nc)
	if name == nil {
		return nil
	}
	domain := ""
	if d, ok := strings.CutPrefix(api, "$JS."); ok {
		domain, _ = strings.CutSuffix(d, ".API.")
		if d == "API." {
			domain = ""
		}
	}
	js, _ := nc.ConnectedServerJetStream()
	return &where{name: *name, standalone: js && (domain == "" || domain == nc.ConnectedDomain())}
}

// early reports whether the server holding a consumer (host, the view's)
// may restart unheard by a replica connected at at: it redelivers then by
// times it kept to the second (lease.RestorePrecision), and no reconnect
// cuts the leases. A consumer of a standalone server held elsewhere (the
// hub a leaf node links to) is such a one.
func early(host string, at *where) bool {
	switch {
	case host == "" || at == nil:
		return false
	case host == standaloneHost:
		return !at.standalone
	}
	return host != at.name
}

// serverName is the name of the server nc is connected to now (nil:
// unknown).
func serverName(nc *nats.Conn) *string {
	if nc == nil {
		return nil
	}
	if name := nc.ConnectedServerName(); name != "" {
		return &name
	}
	return nil
}
