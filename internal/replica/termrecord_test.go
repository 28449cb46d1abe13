package replica_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
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
