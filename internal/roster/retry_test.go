package roster_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/roster"
)

// signal is a slog handler that closes a channel on the first record whose
// message contains what.
type signal struct {
	what string
	once sync.Once
	seen chan struct{}
}

func (s *signal) Enabled(context.Context, slog.Level) bool { return true }
func (s *signal) WithAttrs([]slog.Attr) slog.Handler       { return s }
func (s *signal) WithGroup(string) slog.Handler            { return s }
func (s *signal) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, s.what) {
		s.once.Do(func() { close(s.seen) })
	}
	return nil
}

// A replica whose write of what it serves fails writes it again until it
// lands, so that its peers count it and split max_waiting with it. The
// write is made to fail by a message limit on the bucket's stream that
// refuses a new key (the liveness keys, replaced in place, still go
// through), lifted once the failure was logged.
func TestAFailedWriteOfWhatAReplicaServesIsRetried(t *testing.T) {
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}

	b := open(t, natstest.Connect(t, ns), "b")
	defer b.Close(ctx)
	bSees := join(t, b, "ORDERS", "billing")

	failed := &signal{what: "could not write the consumers this replica serves", seen: make(chan struct{})}
	ajs, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	a, err := roster.Open(ctx, ajs, "", 1, "a", slog.New(failed))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)

	s, err := js.Stream(ctx, "KV_"+roster.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	// b's list and both liveness keys are in; a's list is not yet.
	natstest.Eventually(t, 5*time.Second, "b's list and both liveness keys stored", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 3
	})
	limit := func(n int64) {
		t.Helper()
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cfg := info.Config
		cfg.MaxMsgs = n
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	limit(3)

	aSees := join(t, a, "ORDERS", "billing")
	select {
	case <-failed.seen:
	case <-ctx.Done():
		t.Fatal("a's write of what it serves never failed")
	}
	limit(-1)

	natstest.Eventually(t, 10*time.Second, "b counts a once a's write lands", func() bool { return bSees.get() == 2 })
	natstest.Eventually(t, 5*time.Second, "a counts b", func() bool { return aSees.get() == 2 })
}
