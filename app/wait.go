package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/config"
	"github.com/jetgate/jetgate/internal/consumer"
)

// A jetgate started before NATS or JetStream is there waits for it, alive
// and not ready, rather than stopping: an orchestrator restarts a stopped
// one with a back-off (Kubernetes, up to 5 minutes), long after NATS is
// back. Tries come at most every waitMost, and a failure is logged at most
// every waitMost too.
const (
	waitLeast = 250 * time.Millisecond
	waitMost  = 5 * time.Second
)

// waitReason is what /readyz says meanwhile.
const waitReason = "waiting for NATS JetStream"

// unavailableCodes are the JetStream API's error codes that say JetStream
// is not there or not ready yet (not enabled, no meta leader, a stream or
// consumer still recovering), not that it refuses what was asked; those
// nats.go does not name are nats-server's (server/errors.json).
var unavailableCodes = map[jetstream.ErrorCode]bool{
	jetstream.JSErrCodeJetStreamNotEnabled:           true,
	jetstream.JSErrCodeJetStreamNotEnabledForAccount: true,

	10008: true, // JetStream system temporarily unavailable
	10009: true, // JetStream cluster can not handle request (no leader)
	10118: true, // stream is offline
	10119: true, // consumer is offline
	10194: true, // stream is offline: reason
	10195: true, // consumer is offline: reason
}

// unavailable reports whether err says NATS cannot be reached or JetStream
// is not ready, which start-up waits out, rather than a definite answer
// (refused credentials, certificates or configuration), which stops it.
func unavailable(err error) bool {
	var refused *consumer.RefusedError
	if errors.As(err, &refused) {
		return unavailableCodes[refused.Code]
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return unavailableCodes[apiErr.ErrorCode]
	}
	var netErr net.Error
	var dnsErr *net.DNSError // a name that is not served yet, as a Kubernetes service's before it exists
	return errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrReconnectBufExceeded) ||
		errors.As(err, &dnsErr) || errors.As(err, &netErr) && netErr.Timeout()
}

// atServer is err, met at path asking the server what format says: kept as
// it is beneath the words when unavailable (start-up waits), else the
// configuration error that stops start-up.
func atServer(c *config.Config, path string, err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if unavailable(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return c.Errorf(path, "%s: %v", what, err)
}

// untilAvailable runs try until it does not fail unavailable, waiting
// between tries from waitLeast doubling to waitMost. It returns ctx's error
// when ctx ends first, and the connection's when it is closed for good.
func (w *natsWatch) untilAvailable(ctx context.Context, step string, try func() error) error {
	wait, since := waitLeast, time.Now()
	var logged time.Time
	for n := 1; ; n++ {
		err := try()
		if err == nil && n > 1 {
			w.log.Info("done waiting for NATS JetStream", "step", step, "tries", n, "waited", time.Since(since).Round(time.Millisecond))
		}
		if err == nil || !unavailable(err) {
			return err
		}
		if time.Since(logged) >= waitMost {
			logged = time.Now()
			w.log.Warn("waiting for NATS JetStream: not ready, trying again", "step", step, "tries", n, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case err := <-w.lost:
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, waitMost)
	}
}

// stoppedOr is err, or nil when ctx ended: a stop while starting.
func stoppedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// swapHandler is the REST listener's handler, changed once it is built.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}
