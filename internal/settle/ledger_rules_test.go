package settle

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
)

func testLedger(t *testing.T) (*Ledger, context.Context) {
	t.Helper()
	ns := natstest.Start(t)
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	l, err := OpenLedger(ctx, js, 1)
	if err != nil {
		t.Fatal(err)
	}
	return l, ctx
}

func entry(seq uint64) []Entry {
	return []Entry{{Stream: "ORDERS", Consumer: "billing", StreamSeq: seq, Delivered: 1, TTL: time.Minute}}
}

// The ledger's rules for an adopted lease: an Extend claims nothing (so an
// Ack after it is sent), and a retried Term is sent again like a retried
// Ack; a Nak after either is refused.
func TestLedgerRulesForAdoptedLeases(t *testing.T) {
	l, ctx := testLedger(t)
	verdict := func(op lease.Op, seq uint64) Verdict {
		t.Helper()
		vs, fails := l.Verdicts(ctx, op, Adopted, entry(seq))
		if fails[0] != nil {
			t.Fatal(fails[0])
		}
		return vs[0]
	}
	for i, step := range []struct {
		op   lease.Op
		seq  uint64
		want Verdict
	}{
		{lease.OpExtend, 1, Send}, {lease.OpAck, 1, Send}, {lease.OpAck, 1, Send}, {lease.OpNak, 1, Refuse},
		{lease.OpTerm, 2, Send}, {lease.OpTerm, 2, Send}, {lease.OpAck, 2, Refuse},
		{lease.OpNak, 3, Send}, {lease.OpNak, 3, Done}, {lease.OpExtend, 3, Refuse},
	} {
		if got := verdict(step.op, step.seq); got != step.want {
			t.Fatalf("step %d, %v of %d: verdict %v, want %v", i, step.op, step.seq, got, step.want)
		}
	}
}

// Only a nak'ed record makes a late Nak done: an Ack or Term recorded does
// not.
func TestNakedAlreadyOnlyForANak(t *testing.T) {
	l, ctx := testLedger(t)
	for seq, op := range map[uint64]lease.Op{1: lease.OpNak, 2: lease.OpAck, 3: lease.OpTerm} {
		if _, fails := l.Claim(ctx, op, entry(seq)); fails[0] != nil {
			t.Fatal(fails[0])
		}
	}
	for seq, want := range map[uint64]bool{1: true, 2: false, 3: false, 4: false} {
		if got := l.NakedAlready(ctx, entry(seq), time.Time{})[0]; got != want {
			t.Errorf("seq %d: naked %v, want %v", seq, got, want)
		}
	}
}

// A Nak recorded before the last consumer reset the replica noticed is of
// another delivery with the same count (a reset restarts the counts): it
// does not make a late Nak after the reset done, which stays LEASE_EXPIRED
// (the seeks-and-edits scenario saw such a Nak answered OK, 123ms after the
// later delivery was handed out, from a record made before a seek).
func TestNakedAlreadyIgnoresARecordFromBeforeAReset(t *testing.T) {
	l, ctx := testLedger(t)
	if _, fails := l.Claim(ctx, lease.OpNak, entry(1)); fails[0] != nil {
		t.Fatal(fails[0])
	}
	_, recorded, err := l.record(ctx, entry(1)[0])
	if err != nil || recorded.IsZero() {
		t.Fatalf("the record's time: %v %v", recorded, err)
	}
	if !l.NakedAlready(ctx, entry(1), recorded.Add(-time.Second))[0] {
		t.Fatal("a Nak recorded after the last reset: not naked; want naked")
	}
	if l.NakedAlready(ctx, entry(1), recorded.Add(time.Second))[0] {
		t.Fatal("a Nak recorded before the last reset: naked; want not (another delivery of the same count)")
	}
}

// Release deletes a record of the op given alone: a Nak released is claimed
// afresh by its retry, while another op's record, or none, is left as it
// is.
func TestLedgerReleaseLetsOnlyItsOwnOpGo(t *testing.T) {
	l, ctx := testLedger(t)
	for seq, op := range map[uint64]lease.Op{1: lease.OpNak, 2: lease.OpAck} {
		if _, fails := l.Claim(ctx, op, entry(seq)); fails[0] != nil {
			t.Fatal(fails[0])
		}
	}
	for _, seq := range []uint64{1, 2, 3} {
		if fails := l.Release(ctx, lease.OpNak, entry(seq)); fails[0] != nil {
			t.Fatalf("release of seq %d: %v", seq, fails[0])
		}
	}
	for seq, want := range map[uint64]lease.Op{1: 0, 2: lease.OpAck, 3: 0} {
		if got, fails := l.Lookup(ctx, entry(seq)); fails[0] != nil || got[0] != want {
			t.Errorf("seq %d after a release of its Nak: %v (%v); want %v", seq, got[0], fails[0], want)
		}
	}
	if l.NakedAlready(ctx, entry(1), time.Time{})[0] {
		t.Fatal("a released Nak still counts as nak'ed")
	}
	prior, fails := l.Claim(ctx, lease.OpNak, entry(1))
	if fails[0] != nil || prior[0] != 0 {
		t.Fatalf("the retry's claim of the released Nak: prior %v (%v); want none, claimed afresh", prior[0], fails[0])
	}
	if vs, _ := l.Verdicts(ctx, lease.OpNak, Issued, entry(1)); vs[0] != Done {
		t.Fatalf("a Nak after the fresh claim: %v; want Done", vs[0])
	}
}
