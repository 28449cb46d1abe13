package push_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/push"
)

// replica.Close alone (no StopPush before it) stops the pushers within its
// request timeout, then naks back what they held, with a timeout of its
// own: an endpoint that does not answer took the close's one timeout, and
// the naks went with a context already ended (a helper's test): another
// replica waited out ack_wait for every message the stopped one held.
func TestAReplicaClosedAloneHandsBackWhatItsPusherHeld(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var first atomic.Bool // the first replica's pushes are never answered
	first.Store(true)
	rc.answerWith(func(_ int, p pushed, w http.ResponseWriter) {
		if first.Load() {
			<-p.ctx.Done()
		}
	})
	cc := consumerCfg(func(c *consumer.Config) { c.AckWait = 30 * time.Second })
	r, _ := e.replica(cc, push.Config{URL: rc.URL, Concurrency: 4})
	for i := range 10 {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	for range 3 {
		rc.next(t, 5*time.Second)
	}
	first.Store(false)
	began := time.Now()
	r.Close() // as a replica's owner closes it: its request timeout (2s) bounds the pushes in flight
	t.Logf("Close took %v; the server holds %d unacked", time.Since(began), e.info().NumAckPending)
	e.replica(cc, push.Config{URL: rc.URL, Concurrency: 4})
	e.drained(10 * time.Second)
}
