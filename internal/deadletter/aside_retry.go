package deadletter

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// retry copies the dead letters of r's parked advisories (key's), in their
// order, each deleted from WaitingStream once copied; after a failure it
// tries again later, longer each time. It ends once none is left.
func (w *Worker) retry(r Route, key [2]string) {
	defer w.wait.wg.Done()
	ctx := w.wait.ctx
	delay, from, tries := retryFailedAfter, uint64(1), 0
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gen := w.parkedSince(key)
		next, none, err := w.retryOne(ctx, r, key, from, tries > 0)
		switch {
		case none && w.unsetAside(key, gen):
			w.log.Info("the dead letters of a consumer set aside are all stored", "stream", key[0], "consumer", key[1])
			return
		case none: // parked meanwhile: looked for again
			t.Reset(0)
		case err != nil:
			tries++
			delay = min(2*delay, waitingMaxDelay)
			w.log.Debug("could not copy a parked dead letter; retrying", "stream", key[0], "consumer", key[1], "in", delay, "err", err)
			t.Reset(delay)
		default:
			from, tries, delay = next, 0, retryFailedAfter
			t.Reset(0)
		}
	}
}

// retryOne copies the dead letters of key's first advisory parked at from
// or later, and deletes it: next is where the one after it is looked for.
// none: there is no such advisory.
func (w *Worker) retryOne(ctx context.Context, r Route, key [2]string, from uint64, again bool) (next uint64, none bool, _ error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	m, err := w.wait.s.GetMsg(gctx, from, jetstream.WithGetMsgSubject(waitingSubject(key)))
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return from, true, nil
	case err != nil:
		return from, false, err
	}
	var p parked
	switch err := json.Unmarshal(m.Data, &p); {
	case err != nil:
		w.log.Error("dropped a parked advisory that does not parse", "subject", m.Subject, "err", err)
	case p.Reason == ReasonTerminated && !r.OnTerm:
		// Parked by a replica that does not route it: no dead letter here.
	default:
		if err := w.copyAll(ctx, r, p.Advisories, p.Reason, again, func() {}); err != nil {
			return m.Sequence, false, err
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.wait.s.DeleteMsg(dctx, m.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		// Copied again by a later retry: stored once (its Nats-Msg-Id).
		w.log.Debug("could not delete a parked advisory", "seq", m.Sequence, "err", err)
	}
	return m.Sequence + 1, false, nil
}

// parkedSince is how often key's advisories were seen parked since it was
// set aside.
func (w *Worker) parkedSince(key [2]string) uint64 {
	w.wait.mu.Lock()
	defer w.wait.mu.Unlock()
	return w.wait.aside[key]
}

// unsetAside takes key back from aside unless an advisory of it was parked
// since gen (then its retry looks again).
func (w *Worker) unsetAside(key [2]string, gen uint64) bool {
	w.wait.mu.Lock()
	defer w.wait.mu.Unlock()
	if w.wait.aside[key] != gen {
		return false
	}
	delete(w.wait.aside, key)
	return true
}
