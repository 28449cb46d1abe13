package push_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// A batching pusher holds no more messages than its batches' max_bytes
// (and room for the largest message one pull takes): batches of large
// messages used to hold max_messages of them per worker, each lease kept
// alive away from the other replicas (51 of 90KB where a batch takes one).
func TestBatchesOfLargeMessagesHoldTheirMaxBytes(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	most := 0 // leases the server counts unacked as a batch arrives
	var cons jetstream.Consumer
	rc.answerWith(func(_ int, _ pushed, _ http.ResponseWriter) {
		mu.Lock()
		defer mu.Unlock()
		if ci, err := cons.Info(context.Background()); err == nil {
			most = max(most, ci.NumAckPending)
		}
	})
	pc := batched(rc.URL, push.Batch{MaxMessages: 100, MaxBytes: 100_000, MaxWait: 10 * time.Millisecond})
	pc.Concurrency = 1
	e.replica(consumerCfg(), pc)
	mu.Lock()
	var err error
	cons, err = e.js.Consumer(context.Background(), stream, name)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 90_000)
	for range 150 {
		e.publish("orders.new", big, nil)
	}
	e.drained(30 * time.Second)
	bound := (int(pc.Concurrency)*100_000+int(consumer.DefaultMaxFetchBytes))/90_000 + 1
	mu.Lock()
	defer mu.Unlock()
	if most == 0 || most > bound {
		t.Fatalf("at most %d messages held unacked as a batch came; want 1 to %d (a batch's max_bytes, and room for the largest message a pull takes)", most, bound)
	}
}
