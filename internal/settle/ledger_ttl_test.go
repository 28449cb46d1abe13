package settle

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
)

// recordTTL is the TTL the server keeps the ledger record of e for.
func recordTTL(t *testing.T, js jetstream.JetStream, e Entry) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "KV_"+LedgerBucket)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, "$KV."+LedgerBucket+"."+e.key())
	if err != nil {
		t.Fatalf("the ledger record of %s: %v", e.key(), err)
	}
	return parseTTL(t, m.Header.Get(jetstream.MsgTTLHeader))
}

// parseTTL reads a Nats-TTL header: a Go duration, or whole seconds.
func parseTTL(t *testing.T, v string) time.Duration {
	t.Helper()
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("Nats-TTL %q is neither a duration nor seconds", v)
	}
	return time.Duration(s) * time.Second
}

// A ledger record lives as long as a token of its delivery may (the entry's
// TTL, the consumer's ack wait) and the slack for clocks on top: not the
// slack alone, or a stale settle of a delivery nak'ed long before its
// deadline would find nothing and land on the next delivery.
func TestLedgerRecordOutlivesTheAckWait(t *testing.T) {
	ns := natstest.Start(t)
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := OpenLedger(ctx, js, 1)
	if err != nil {
		t.Fatal(err)
	}
	ackWait := 10 * ledgerSlack
	e := Entry{Stream: "ORDERS", Consumer: "billing", StreamSeq: 7, Delivered: 1, TTL: ackWait}
	prior, fails := l.Claim(ctx, lease.OpNak, []Entry{e})
	if fails[0] != nil || prior[0] != 0 {
		t.Fatalf("claim: %v %v", prior[0], fails[0])
	}
	if got := recordTTL(t, js, e); got < ackWait+ledgerSlack {
		t.Fatalf("the record of a delivery with an ack wait of %v lives %v; want at least %v", ackWait, got, ackWait+ledgerSlack)
	}
}

// A consumer's reset record ages out (RecordReset's TTL), written first or
// over an earlier one: one key per consumer ever reset or deleted is not
// kept for good.
func TestAResetRecordAgesOut(t *testing.T) {
	ns := natstest.Start(t)
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := OpenLedger(ctx, js, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KV_"+LedgerBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{time.UnixMilli(1_800_000_000_000), time.UnixMilli(1_800_000_001_000)} {
		if err := l.RecordReset(ctx, "ORDERS", "billing", at, time.Hour); err != nil {
			t.Fatal(err)
		}
		m, err := s.GetLastMsgForSubject(ctx, "$KV."+LedgerBucket+"."+resetKey("ORDERS", "billing"))
		if err != nil {
			t.Fatal(err)
		}
		if got := parseTTL(t, m.Header.Get(jetstream.MsgTTLHeader)); got != time.Hour {
			t.Fatalf("the record of the reset at %v lives %v; want 1h", at, got)
		}
	}
}
