package consumer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
)

// Run attends to the consumer again each time a Fetch makes it busy after
// it went idle: a wake is sent only while Run is not attending, so one that
// came as Run was leaving must still be seen. Each round's lease expires
// unsettled and only Run's sweep drops it; a lost wake leaves it held.
func TestRunAttendsAgainAfterGoingIdle(t *testing.T) {
	e := start(t, consumer.Config{AckWait: time.Second, MaxAckPending: 1024})
	for round := range 4 {
		e.publish(fmt.Sprintf("orders.%d", round), "m")
		if got := e.fetch(consumer.FetchRequest{Batch: 1, Expires: time.Second}).Messages; len(got) != 1 {
			t.Fatalf("round %d: fetched %d messages, want 1", round, len(got))
		}
		natstest.Eventually(t, within, fmt.Sprintf("round %d: the expired lease swept", round), func() bool {
			return e.c.LeasesHeld() == 0
		})
	}
}
