package keycheck

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/natstest"
)

// A peer whose answer comes twice (subscribed twice, or its answer
// repeated on the way) still counts once in the mismatch gauge.
func TestAPeerAnsweringTwiceCountsOnce(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	theirs := ring(t, "b")
	sub, err := nc.Subscribe(Subject, func(m *nats.Msg) {
		var req request
		if json.Unmarshal(m.Data, &req) != nil {
			return
		}
		b, _ := json.Marshal(answer{ID: "peer-b", MAC: theirs.Sign(domain, []byte(req.Nonce)), KnowsYours: false})
		for range 2 {
			_ = m.Respond(b)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	r := startReplica(t, ns.ClientURL(), ring(t, "a"))
	if r.c.Mismatched() != 1 || r.gauge(t) != 1 {
		t.Errorf("mismatched %d, gauge %v; want the one peer", r.c.Mismatched(), r.gauge(t))
	}
	if n := r.logs.count("TOKEN KEY MISMATCH"); n != 1 {
		t.Errorf("%d warnings; want one for the one peer", n)
	}
}
