package push_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
)

// pushState is the replica's push state of the consumer.
func pushState(t *testing.T, r *replica.Replica) push.State {
	t.Helper()
	st, err := r.Consumer(context.Background(), stream, name)
	if err != nil || st.Push == nil {
		t.Fatalf("push state: %v %v", st.Push, err)
	}
	return *st.Push
}

// An endpoint that refuses connections, with a backlog of hundreds and
// max_deliver 4, costs no delivery: nothing is dead-lettered, nothing
// redelivered, and once it listens again everything arrives.
func TestAnOutageBurnsNoDeliveries(t *testing.T) {
	e := newEnv(t)
	addr := freeAddr(t)
	r, _ := e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 2 * time.Second }), push.Config{URL: "http://" + addr + "/hook", Concurrency: 8,
		RetryMin: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond})
	const n = 300
	for i := range n {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	natstest.Eventually(t, 5*time.Second, "held back", func() bool { return !pushState(t, r).EndpointUp })
	// Two ack_waits, refused: held leases are extended, unpulled messages
	// wait on the server.
	outage := time.NewTimer(4 * time.Second)
	<-outage.C
	if st := pushState(t, r); st.EndpointUp || st.LastError == "" {
		t.Fatalf("during the outage: %+v", st)
	}
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters during the outage", len(dl))
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the endpoint's port was taken meanwhile: %v", err)
	}
	rc := newReceiver(t)
	srv := &http.Server{Handler: rc.Config.Handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	seen := map[string]bool{}
	for len(seen) < n {
		p := rc.next(t, 10*time.Second)
		seen[p.header.Get("Webhook-Id")] = true
		if d := p.header.Get("Jetgate-Delivered"); d != "1" {
			t.Fatalf("%s arrived as delivery %s: the outage cost deliveries", p.header.Get("Webhook-Id"), d)
		}
	}
	e.drained(10 * time.Second)
	if ci := e.info(); ci.NumRedelivered != 0 {
		t.Fatalf("%d redelivered", ci.NumRedelivered)
	}
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters", len(dl))
	}
	if !pushState(t, r).EndpointUp {
		t.Fatal("still held back once the endpoint answers")
	}
}

// Signatures verify with the Standard Webhooks reference library; a body
// changed in transit does not.
func TestSignaturesVerifyWithTheStandardWebhooksLibrary(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	e.replica(consumerCfg(), push.Config{URL: rc.URL, SigningSecretFile: writeFile(t, secret+"\n")})
	e.publish("orders.new", `{"order":1}`, nil)
	p := rc.next(t, 5*time.Second)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(p.body, p.header); err != nil {
		t.Fatalf("the signature does not verify: %v (%v)", err, p.header)
	}
	if err := wh.Verify([]byte(`{"order":2}`), p.header); err == nil {
		t.Fatal("a changed body verifies")
	}
	// jetgate's own Verifier, the example receiver's, agrees.
	v, err := push.NewVerifier(writeFile(t, secret))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(p.header, p.body, time.Now()); err != nil {
		t.Fatalf("push.Verifier: %v", err)
	}
	if err := v.Verify(p.header, []byte(`{"order":2}`), time.Now()); err == nil {
		t.Fatal("push.Verifier takes a changed body")
	}
	if err := v.Verify(p.header, p.body, time.Now().Add(push.Tolerance+time.Minute)); err == nil {
		t.Fatal("push.Verifier takes a stale timestamp")
	}
}
