package deadletter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The worker's consumer holds at most workerMaxAckPending advisories, and
// takes them in their order: every advisory it holds waiting for a retry
// holds back those after it. One consumer's letters that cannot be stored
// (its dead-letter stream full with discard new, or deleted) took all its
// room, and no other consumer's dead letter was copied for as long as that
// lasted. So such a consumer is set aside: its advisories are parked in a
// stream of their own (WaitingStream, one subject a consumer, nobody
// consuming it), acked in the advisory stream, and retried from there, one
// at a time, while the others go on. Parking costs a publish, and nothing
// while no consumer is in trouble (the replicas learn of a parked advisory
// by a plain subscription, and look once as they start).
const (
	WaitingStream = "JETGATE_DEAD_LETTERS_WAITING"
	waitingPrefix = "_JETGATE.WAITING."
	// waitingMaxDelay bounds the wait between tries of a consumer set
	// aside (from retryFailedAfter, doubling).
	waitingMaxDelay = 30 * time.Second
)

// parked is an event whose dead letters wait in WaitingStream.
type parked struct {
	Reason     string     `json:"reason"`
	Advisories []advisory `json:"advisories"`
}

// waiting is the worker's side of WaitingStream.
type waiting struct {
	s      jetstream.Stream
	sub    *nats.Subscription
	ctx    context.Context // ends the retries at Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	aside  map[[2]string]uint64 // consumers set aside, each retried by a goroutine: how often parked since
}

func waitingSubject(key [2]string) string { return waitingPrefix + key[0] + "." + key[1] }

// startWaiting makes WaitingStream, listens for advisories parked there
// (by any replica) and sets aside the routes that have some already. On an
// error, nothing is parked: a consumer in trouble holds its places, as
// before (Start says so).
func (w *Worker) startWaiting(ctx context.Context, replicas int) error {
	w.wait.aside = make(map[[2]string]uint64)
	w.wait.ctx, w.wait.cancel = context.WithCancel(context.Background())
	s, err := ensure(ctx, w.js, jetstream.StreamConfig{
		Name:        WaitingStream,
		Description: "jetgate: advisories of consumers whose dead letters could not be stored, until they are",
		Subjects:    []string{waitingPrefix + ">"},
		MaxAge:      14 * 24 * time.Hour,
		Replicas:    max(replicas, 1),
	})
	if err != nil {
		return fmt.Errorf("stream %s: %w", WaitingStream, err)
	}
	if w.wait.sub, err = w.js.Conn().Subscribe(waitingPrefix+">", func(m *nats.Msg) {
		if stream, consumer, ok := strings.Cut(strings.TrimPrefix(m.Subject, waitingPrefix), "."); ok {
			w.setAside([2]string{stream, consumer})
		}
	}); err != nil {
		return fmt.Errorf("subscribe to %s>: %w", waitingPrefix, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(waitingPrefix+">"))
	if err != nil {
		_ = w.wait.sub.Unsubscribe()
		return fmt.Errorf("stream %s: %w", WaitingStream, err)
	}
	w.wait.mu.Lock()
	w.wait.s = s // from now on, set aside and parked
	w.wait.mu.Unlock()
	for subject := range info.State.Subjects {
		if stream, consumer, ok := strings.Cut(strings.TrimPrefix(subject, waitingPrefix), "."); ok {
			w.setAside([2]string{stream, consumer})
		}
	}
	return nil
}

// parking reports whether advisories are parked (startWaiting passed).
func (w *Worker) parking() bool {
	w.wait.mu.Lock()
	defer w.wait.mu.Unlock()
	return w.wait.s != nil
}

// stopWaiting ends the retries, waiting for them at most until ctx ends.
func (w *Worker) stopWaiting(ctx context.Context) {
	if w.wait.sub != nil {
		_ = w.wait.sub.Unsubscribe()
	}
	w.wait.mu.Lock() // setAside starts no retry after it (wg.Add before Wait)
	w.wait.cancel()
	w.wait.mu.Unlock()
	done := make(chan struct{})
	go func() { w.wait.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (w *Worker) isAside(key [2]string) bool {
	w.wait.mu.Lock()
	defer w.wait.mu.Unlock()
	_, ok := w.wait.aside[key]
	return ok
}

// setAside retries key's parked advisories, if the worker routes it, from
// now on until none is left.
func (w *Worker) setAside(key [2]string) {
	r, ok := w.routes[key]
	if !ok {
		return // another deployment's: its replicas retry them
	}
	w.wait.mu.Lock()
	defer w.wait.mu.Unlock()
	if n, ok := w.wait.aside[key]; ok {
		w.wait.aside[key] = n + 1
		return
	}
	if w.wait.s == nil || w.wait.ctx.Err() != nil {
		return
	}
	w.wait.aside[key] = 0
	w.wait.wg.Add(1)
	go w.retry(r, key)
}

// putAside parks m's event, whose letters could not be copied (err), and
// sets its consumer aside; or, where the messages' stream was not found
// (once: a cluster's meta leader moving), naks m to look again.
func (w *Worker) putAside(m jetstream.Msg, key [2]string, reason string, as []advisory, err error) {
	if errors.Is(err, jetstream.ErrStreamNotFound) && !redelivered(m) {
		w.log.Warn("could not copy a dead letter; retrying", "stream", key[0], "consumer", key[1], "err", err)
		_ = m.NakWithDelay(retryFailedAfter)
		return
	}
	w.log.Warn("could not copy a dead letter; its consumer's letters wait in "+WaitingStream+" and are retried", "stream", key[0], "consumer", key[1], "err", err)
	w.parkOrNak(m, key, reason, as, retryFailedAfter)
}

// parkOrNak parks m's event and acks m, or, where NATS does not take it,
// naks m to be retried after delay.
func (w *Worker) parkOrNak(m jetstream.Msg, key [2]string, reason string, as []advisory, delay time.Duration) {
	if !w.parking() {
		_ = m.NakWithDelay(delay)
		return
	}
	data, err := json.Marshal(parked{Reason: reason, Advisories: as})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = w.js.Publish(ctx, waitingSubject(key), data)
		cancel()
	}
	if err != nil {
		w.log.Warn("could not park a dead letter's advisory; retrying", "stream", key[0], "consumer", key[1], "err", err)
		_ = m.NakWithDelay(delay)
		return
	}
	w.setAside(key)
	_ = m.Ack()
}
