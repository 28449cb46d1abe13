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
// so that the sender does not wait resetWordWait for it; its own words it
// never answers.
func TestAWordForAConsumerNotServedIsAnsweredAtOnce(t *testing.T) {
	r, nc, _ := billingReplica(t, time.Second)
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
