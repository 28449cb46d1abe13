package replica_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A replica that may not publish the records of its Terms refuses to start
// with a consumer whose dead letter has on_term, naming the subject it
// needs, rather than make every Term of it wait out its record; without
// on_term it needs no such permission.
func TestAReplicaThatMayNotRecordTermsDoesNotStart(t *testing.T) {
	ns := natstest.StartWith(t, &server.Options{Users: []*server.User{
		{Username: "admin", Password: "admin"},
		{Username: "jetgate", Password: "jetgate", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"_JETGATE.TERMINATED.>"}},
		}},
	}})
	admin := natstest.Connect(t, ns, nats.UserInfo("admin", "admin"))
	natstest.Stream(t, admin, "ORDERS", "orders.>")
	natstest.Stream(t, admin, "DLQ", "dlq.>")
	start := func(onTerm bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := replica.New(ctx, replica.Options{
			Conn: natstest.Connect(t, ns, nats.UserInfo("jetgate", "jetgate")), Keys: token.RandomKeyring(), RequestTimeout: time.Second,
			Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", DeadLetter: &consumer.DeadLetter{Subject: "dlq.billing", OnTerm: onTerm}}},
		})
		if err == nil {
			r.Close()
		}
		return err
	}
	if err := start(false); err != nil {
		t.Fatalf("without on_term: %v", err)
	}
	err := start(true)
	if err == nil || !strings.Contains(err.Error(), "_JETGATE.TERMINATED.ORDERS.billing") {
		t.Fatalf("with on_term and no permission to record Terms: %v; want a refusal naming _JETGATE.TERMINATED.ORDERS.billing", err)
	}
	t.Log(err)
}

// A Term the server confirmed whose record cannot be stored (here the
// replica's user loses the permission to publish it; in production, NATS
// is away) is counted by jetgate_terms_unrecorded while the record is tried
// again in the background, and no longer once it is stored: an operator
// sees the window where losing the replica may lose a dead letter, and the
// record is there in the end.
func TestATermWhoseRecordWaitsIsCountedUntilItIsStored(t *testing.T) {
	e := termWithRecordRefused(t)
	e.reload()
	// Back at 0 within recordFor (a minute) only as the record is stored.
	natstest.Eventually(t, 10*time.Second, "the record stored once it may be", func() bool { return e.unrecorded() == 0 })
	natstest.Eventually(t, 10*time.Second, "both dead letters", func() bool {
		return len(natstest.StreamMsgs(t, e.js, "DLQ", "dlq.billing")) == 2
	})
}

// A replica that stops gracefully waits, within its request timeout, for
// the records its Terms still try to store, rather than drop them.
func TestAReplicaClosingWaitsForItsTermsRecords(t *testing.T) {
	e := termWithRecordRefused(t)
	closed := make(chan struct{})
	go func() {
		e.r.Close() // the worker first: the record stays in the advisory stream
		close(closed)
	}()
	e.reload()
	<-closed
	if recs := natstest.StreamMsgs(t, e.js, deadletter.AdvisoryStream, "_JETGATE.TERMINATED.ORDERS.billing"); len(recs) != 1 {
		t.Fatalf("%d records of the Terms stored as the replica closed; want 1", len(recs))
	}
}

// termRefused is a replica with two Terms confirmed whose record its NATS
// user may not store (termWithRecordRefused).
type termRefused struct {
	r          *replica.Replica
	js         jetstream.JetStream
	reload     func(deny ...string) // the replica's user's permissions, denying deny
	unrecorded func() float64       // its jetgate_terms_unrecorded
}

// termWithRecordRefused starts a replica serving billing of ORDERS with a
// dead letter on_term, leases two messages and Terms them with the record
// refused, and checks that jetgate_terms_unrecorded counts them.
func termWithRecordRefused(t *testing.T) termRefused {
	ns, reload := withReloadableUsers(t)
	e := termRefused{reload: reload}
	admin := natstest.Connect(t, ns, nats.UserInfo("admin", "admin"))
	natstest.Stream(t, admin, "ORDERS", "orders.>")
	natstest.Stream(t, admin, "DLQ", "dlq.>")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	var err error
	e.r, err = replica.New(ctx, replica.Options{
		Conn: natstest.Connect(t, ns, nats.UserInfo("jetgate", "jetgate")), Keys: token.RandomKeyring(), RequestTimeout: 2 * time.Second, Metrics: reg,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", DeadLetter: &consumer.DeadLetter{Subject: "dlq.billing", OnTerm: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.r.Close)
	e.unrecorded = func() float64 {
		t.Helper()
		m := seriesOf(t, reg, "jetgate_terms_unrecorded", "billing")
		if m == nil {
			t.Fatal("no jetgate_terms_unrecorded{consumer=billing}")
		}
		return m.GetGauge().GetValue()
	}
	if got := e.unrecorded(); got != 0 {
		t.Fatalf("jetgate_terms_unrecorded at start: %v", got)
	}
	if e.js, err = jetstream.New(admin); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"orders.1", "orders.2"} {
		if _, err := e.js.Publish(ctx, s, []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.r.Fetch(ctx, "ORDERS", "billing", consumer.FetchRequest{Batch: 2, Expires: 5 * time.Second})
	if err != nil || len(res.Messages) != 2 {
		t.Fatalf("fetch: %v %v", res, err)
	}
	e.reload("_JETGATE.TERMINATED.>")
	out, err := e.r.Settle(ctx, settle.Request{Op: lease.OpTerm, Stream: "ORDERS", Consumer: "billing", Reason: "bad",
		Tokens: []string{res.Messages[0].Token, res.Messages[1].Token}})
	if err != nil || out[0].Err != nil || out[1].Err != nil {
		t.Fatalf("term: %+v %v", out, err)
	}
	if got := e.unrecorded(); got != 2 {
		t.Fatalf("jetgate_terms_unrecorded after two Terms whose record was refused: %v, want 2", got)
	}
	return e
}

// withReloadableUsers starts a NATS server with users admin (every
// permission) and jetgate (every permission but publishing on the subjects
// that reload denies, none at first), and returns it with reload.
func withReloadableUsers(t *testing.T) (*server.Server, func(deny ...string)) {
	users := func(deny ...string) []*server.User {
		return []*server.User{
			{Username: "admin", Password: "admin"},
			{Username: "jetgate", Password: "jetgate", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: deny},
			}},
		}
	}
	opts := &server.Options{StoreDir: t.TempDir(), Users: users()}
	ns := natstest.StartWith(t, opts)
	return ns, func(deny ...string) {
		t.Helper()
		o := *opts
		o.Host, o.Port, o.JetStream, o.NoLog, o.NoSigs = "127.0.0.1", ns.Addr().(*net.TCPAddr).Port, true, true, true
		o.Users = users(deny...)
		if err := ns.ReloadOptions(&o); err != nil {
			t.Error(err)
		}
	}
}
