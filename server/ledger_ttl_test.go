package server_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/settle"
)

// The ledger record of a Nak lives longer than the consumer's ack wait,
// however much larger than the ledger's slack that is: a token of the
// nak'ed delivery stays live until its deadline, and its stale settle must
// still find the Nak recorded.
func TestNakRecordOutlivesTheConsumersAckWait(t *testing.T) {
	const wait = time.Minute
	h := newHarness(t, ackWait(wait))
	h.publish(1)
	m := h.fetchOne(time.Second)
	wantNoFailures(t, nak(t, h, h.cons, time.Hour, m.GetToken()))

	s, err := h.js.Stream(h.ctx(), "KV_"+settle.LedgerBucket)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.GetLastMsgForSubject(h.ctx(), "$KV."+settle.LedgerBucket+".>")
	if err != nil {
		t.Fatalf("the ledger record of the Nak: %v", err)
	}
	v := rec.Header.Get(jetstream.MsgTTLHeader)
	ttl, err := time.ParseDuration(v)
	if err != nil {
		secs, serr := strconv.ParseInt(v, 10, 64)
		if serr != nil {
			t.Fatalf("the ledger record's Nats-TTL %q: %v", v, err)
		}
		ttl = time.Duration(secs) * time.Second
	}
	if ttl <= wait {
		t.Fatalf("the ledger record of a Nak lives %v; the consumer's ack wait is %v: want it longer", ttl, wait)
	}
}
