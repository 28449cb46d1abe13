package push_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
)

// An idle pusher's pull waits 30s for one message, in line: closing its
// replica waits for nothing (a reviewer's finding: a first form's pull was
// no_wait, and a closing consumer waited out its whole bound, 2s here, for
// a no_wait pull's end that the server holds back until a message comes).
func TestClosingAnIdlePushersReplicaWaitsForNothing(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	r, _ := e.replica(consumerCfg(), push.Config{URL: rc.URL})
	natstest.Eventually(t, 10*time.Second, "the idle pull waiting", func() bool { return e.info().NumWaiting > 0 })
	began := time.Now()
	r.Close()
	if took := time.Since(began); took > time.Second {
		t.Fatalf("closing a replica whose pusher idles took %v; it holds nothing to wait for", took)
	}
}

// A pinned group's pin lapses when no pull carries it for
// priority_timeout: an idle pusher of a pinned consumer pulls within half
// of it, keeps its pin, and pushes what comes next without its stream
// failing (a reviewer's finding: with 30s idle pulls, a 3s priority_timeout
// lapsed, the next message ended the stream "pin id mismatch", and each
// round's push came later, 100ms to 1.6s).
func TestAnIdlePinnedPusherKeepsItsPin(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	pinned := jetstream.PriorityPolicyPinned
	cc := consumerCfg(func(c *consumer.Config) {
		c.PriorityGroups = []string{"g"}
		c.PriorityPolicy = &pinned
		c.PinnedTTL = 3 * time.Second
	})
	pulls := e.count("$JS.API.CONSUMER.MSG.NEXT.>", func(*nats.Msg) bool { return true })
	r, _ := e.replica(cc, push.Config{URL: rc.URL})
	for round := range 3 {
		e.publish("orders.new", fmt.Sprint(round), nil)
		rc.next(t, 5*time.Second)
		e.drained(5 * time.Second)
		// Idle past the pin's priority_timeout: four pulls at least 1.5s
		// apart, or none in 30s where the pin lapses.
		from := pulls.Load()
		natstest.Eventually(t, 15*time.Second, "idle pulls past the pin's timeout", func() bool { return pulls.Load() >= from+4 })
		st, err := r.Consumer(context.Background(), stream, name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(st.Push.LastError, "pin") {
			t.Fatalf("round %d: the push stream failed: %s", round, st.Push.LastError)
		}
	}
}
