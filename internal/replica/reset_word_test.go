package replica

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
)

// The relay routes a word of a reset to the consumer it names (the
// consumer's own rules: internal/consumer/word_test.go); a replica that
// does not serve the consumer holds none of its leases and answers at once,
// so that a sender that names it does not wait resetWordWait for it. Each
// answer carries the replica's id: the sender waits for those it named,
// and an answer stands for its replica alone. Its own words it never
// answers.
func TestAWordForAConsumerNotServedIsAnsweredAtOnce(t *testing.T) {
	r, nc, _ := billingReplica(t, time.Second)
	ask := func(subject, sender string) error {
		m, err := nc.Request(subject, []byte(sender+" r1"), 500*time.Millisecond)
		if err == nil && string(m.Data) != r.ID().String() {
			t.Errorf("the answer on %s carries %q; want the replica's id %s", subject, m.Data, r.ID())
		}
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
