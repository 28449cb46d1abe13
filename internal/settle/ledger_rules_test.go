package settle

import (
	"context"
	"errors"
	"sync"
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
		if got := l.NakedAlready(ctx, entry(seq))[0]; got != want {
			t.Errorf("seq %d: naked %v, want %v", seq, got, want)
		}
	}
}

// since is entry(seq) made after a reset noticed at t.
func since(seq uint64, t time.Time) []Entry {
	es := entry(seq)
	es[0].Since = t
	return es
}

// recordedAt is when the server stored the record of entry(seq).
func recordedAt(t *testing.T, l *Ledger, ctx context.Context, seq uint64) time.Time {
	t.Helper()
	kve, err := l.kv.Get(ctx, entry(seq)[0].key())
	if err != nil {
		t.Fatalf("the record of %d: %v", seq, err)
	}
	return kve.Created()
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
	recorded := recordedAt(t, l, ctx, 1)
	if !l.NakedAlready(ctx, since(1, recorded.Add(-time.Second)))[0] {
		t.Fatal("a Nak recorded after the last reset: not naked; want naked")
	}
	if l.NakedAlready(ctx, since(1, recorded.Add(time.Second)))[0] {
		t.Fatal("a Nak recorded before the last reset: naked; want not (another delivery of the same count)")
	}
}

// A settle of a delivery made after a reset claims it over a record from
// before the reset (an earlier delivery's, with the same key): a Nak is not
// taken for done, nor an Ack refused, and the new claim, made after the
// reset, is what the next settle of that delivery finds, with the same
// Since. Without a Since every record counts.
func TestAClaimAfterAResetTakesTheEarlierDeliverysPlace(t *testing.T) {
	l, ctx := testLedger(t)
	reset := make(map[uint64]time.Time) // a reset noticed just after each record
	for seq, op := range map[uint64]lease.Op{1: lease.OpNak, 2: lease.OpNak, 3: lease.OpAck} {
		if _, fails := l.Claim(ctx, op, entry(seq)); fails[0] != nil {
			t.Fatal(fails[0])
		}
		reset[seq] = recordedAt(t, l, ctx, seq).Add(time.Nanosecond)
	}
	for i, step := range []struct {
		seq   uint64
		op    lease.Op
		w     Whose
		after bool // the delivery is made after the reset: Since is the reset
		want  Verdict
	}{
		{1, lease.OpNak, Issued, false, Done},    // not known to be after: the record counts
		{1, lease.OpNak, Issued, true, Send},     // an earlier delivery's: claimed afresh
		{1, lease.OpNak, Issued, true, Done},     // and that claim counts
		{2, lease.OpAck, Adopted, false, Refuse}, // another holder's Nak
		{2, lease.OpAck, Adopted, true, Send},
		{2, lease.OpNak, Adopted, true, Refuse}, // the new claim is the Ack's
		{3, lease.OpNak, Issued, true, Send},
		{3, lease.OpAck, Adopted, true, Refuse},
	} {
		var at time.Time
		if step.after {
			at = reset[step.seq]
		}
		vs, fails := l.Verdicts(ctx, step.op, step.w, since(step.seq, at))
		if fails[0] != nil || vs[0] != step.want {
			t.Fatalf("step %d, %v of %d: verdict %v (%v), want %v", i, step.op, step.seq, vs[0], fails[0], step.want)
		}
	}
	if got, fails := l.Lookup(ctx, since(1, recordedAt(t, l, ctx, 1).Add(time.Nanosecond))); fails[0] != nil || got[0] != 0 {
		t.Fatalf("a lookup after a reset: %v (%v); want none", got[0], fails[0])
	}
}

// On a replicated bucket, claims that race each other over a record let go
// (released, or taken over after a reset) all learn the one that was
// recorded: the create over the purge marker fails with the server's own
// code there (10164), not nats.go's ErrKeyExists, and was taken for NATS
// being away.
func TestRacingClaimsOverAReleasedRecordOnAClusterLearnTheWinner(t *testing.T) {
	nodes := natstest.StartCluster(t, 3)
	js, err := jetstream.New(natstest.Connect(t, nodes[0]))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := OpenLedger(ctx, js, 3)
	if err != nil {
		t.Fatal(err)
	}
	const keys, racers = 50, 4
	var es []Entry
	for seq := range uint64(keys) {
		es = append(es, entry(seq+1)...)
	}
	if _, fails := l.Claim(ctx, lease.OpNak, es); errors.Join(fails...) != nil {
		t.Fatal(errors.Join(fails...))
	}
	if err := errors.Join(l.Release(ctx, lease.OpNak, es)...); err != nil {
		t.Fatal(err)
	}
	got := make([][]lease.Op, racers)
	var wg sync.WaitGroup
	for r := range racers {
		wg.Go(func() {
			ops, fails := l.Claim(ctx, lease.OpNak, es)
			if err := errors.Join(fails...); err != nil {
				t.Errorf("racer %d: %v", r, err)
			}
			got[r] = ops
		})
	}
	wg.Wait()
	for k := range keys {
		recorded := 0
		for r := range racers {
			if got[r][k] == 0 {
				recorded++
			}
		}
		if recorded != 1 {
			t.Fatalf("key %d: %d of %d racing claims recorded it; want 1, the others told of it", k, recorded, racers)
		}
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
	if l.NakedAlready(ctx, entry(1))[0] {
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

// The last reset of a consumer noticed is there for a replica that binds it
// later: the latest, whatever order the replicas write in, aged out after
// its TTL; none noticed is zero, and another consumer's is its own.
func TestTheLastResetNoticedIsRecorded(t *testing.T) {
	l, ctx := testLedger(t)
	if at, err := l.LastReset(ctx, "ORDERS", "billing"); err != nil || !at.IsZero() {
		t.Fatalf("none noticed: %v, %v; want zero", at, err)
	}
	first, second := time.UnixMilli(1_800_000_000_000), time.UnixMilli(1_800_000_005_000)
	for _, at := range []time.Time{first, second, first} { // the earlier written last
		if err := l.RecordReset(ctx, "ORDERS", "billing", at, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if at, err := l.LastReset(ctx, "ORDERS", "billing"); err != nil || !at.Equal(second) {
		t.Fatalf("last reset %v, %v; want %v, the later", at, err, second)
	}
	if at, err := l.LastReset(ctx, "ORDERS", "audit"); err != nil || !at.IsZero() {
		t.Fatalf("another consumer's: %v, %v; want zero", at, err)
	}
	kve, err := l.kv.Get(ctx, resetKey("ORDERS", "billing"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.kv.Create(ctx, resetKey("ORDERS", "billing"), kve.Value()); err == nil {
		t.Fatal("the record could be made again: it was not kept")
	}
	var none *Ledger
	if err := none.RecordReset(ctx, "ORDERS", "billing", first, time.Hour); err != nil {
		t.Fatal(err)
	}
}
