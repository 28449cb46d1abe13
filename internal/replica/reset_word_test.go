package replica

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// The relay routes a word of a reset to the consumer it names (the
// consumer's own rules: internal/consumer/word_test.go); a replica that
// does not serve the consumer holds none of its leases and answers at once,
// so that the sender does not wait resetWordWait for it; its own words it
// never answers.
func TestAWordForAConsumerNotServedIsAnsweredAtOnce(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := New(ctx, Options{Conn: natstest.Connect(t, ns), Keys: token.RandomKeyring(), RequestTimeout: time.Second,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing"}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ask := func(subject, sender string) error {
		_, err := nc.Request(subject, []byte(sender+" r1"), 500*time.Millisecond)
		return err
	}
	if err := ask(consumer.ResetWordPrefix+"ORDERS.audit", "peer"); err != nil {
		t.Errorf("a peer's word for a consumer the replica does not serve: %v; want an answer", err)
	}
	if err := ask(consumer.ResetWordPrefix+"ORDERS.billing", "peer"); err != nil {
		t.Errorf("a peer's word for a consumer the replica serves: %v; want an answer once void", err)
	}
	for _, subject := range []string{"ORDERS.audit", "ORDERS.billing"} {
		if err := ask(consumer.ResetWordPrefix+subject, r.ID().String()); err != nats.ErrTimeout {
			t.Errorf("the replica's own word on %s: %v; want no answer", subject, err)
		}
	}
}
