package lease

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
)

// Lease tests run on a clock of their own: t0 plus an offset.
var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	leaseTTL  = 30 * time.Second // deadline of the lease every scenario starts with
	retention = 30 * time.Second // how long settled leases stay
	seq       = 1042
	subj1     = "$JS.ACK.ORDERS.billing.1.1042.77.0.0"
	subj2     = "$JS.ACK.ORDERS.billing.2.1042.78.0.0"
)

// The first and second delivery of message seq.
var (
	dlv1 = Lease{StreamSeq: seq, ConsumerSeq: 77, Delivered: 1, Deadline: t0.Add(leaseTTL)}
	dlv2 = Lease{StreamSeq: seq, ConsumerSeq: 78, Delivered: 2, Deadline: t0.Add(90 * time.Second)}
)

func at(d time.Duration) time.Time { return t0.Add(d) }

func leaseOf(c Lease, subject string) Lease {
	c.AckSubject = subject
	return c
}

// step is one call on a lease table in a scenario.
type step struct {
	name string
	do   func(t *testing.T, tb *Table)
}

func addStep(c Lease, subject string) step {
	return step{fmt.Sprintf("add(delivered %d)", c.Delivered), func(t *testing.T, tb *Table) {
		tb.Add(leaseOf(c, subject))
	}}
}

func adoptStep(c Lease, subject string) step {
	return step{fmt.Sprintf("adopt(delivered %d)", c.Delivered), func(t *testing.T, tb *Table) {
		tb.Adopt(leaseOf(c, subject))
	}}
}

func beginStep(c Lease, op Op, now time.Duration, wantSubject string, wantErr error) step {
	return step{fmt.Sprintf("begin(delivered %d, %s, t0+%s)", c.Delivered, op, now), func(t *testing.T, tb *Table) {
		t.Helper()
		got, _, err := tb.Begin(c.Ref(), op, at(now))
		if got != wantSubject || !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
			t.Fatalf("begin = %q, %v; want %q, %v", got, err, wantSubject, wantErr)
		}
	}}
}

func finishStep(c Lease, op Op, ok bool, now, newDeadline time.Duration) step {
	return step{fmt.Sprintf("finish(delivered %d, %s, ok %t, t0+%s)", c.Delivered, op, ok, now), func(t *testing.T, tb *Table) {
		tb.Finish(c.Ref(), op, ok, at(now), Extension{Deadline: at(newDeadline)})
	}}
}

func sweepStep(now time.Duration) step {
	return step{fmt.Sprintf("sweep(t0+%s)", now), func(t *testing.T, tb *Table) {
		tb.Sweep(at(now))
	}}
}

func wantState(s state) step {
	return step{fmt.Sprintf("want state %d", s), func(t *testing.T, tb *Table) {
		t.Helper()
		got, ok := stateOf(tb, seq)
		if !ok {
			t.Fatalf("lease %d is not in the table", seq)
		}
		if got != s {
			t.Fatalf("lease state = %d, want %d", got, s)
		}
	}}
}

func wantLive(n int) step {
	return step{fmt.Sprintf("want live %d", n), func(t *testing.T, tb *Table) {
		t.Helper()
		if got := tb.Live(); got != n {
			t.Fatalf("live() = %d, want %d", got, n)
		}
	}}
}

// stateOf is the state of the table's lease of message seq.
func stateOf(tb *Table, seq uint64) (state, bool) {
	if e, ok := tb.entries[seq]; ok {
		return e.state, true
	}
	_, ok := tb.settled[seq]
	return stateSettled, ok
}

// checkCount checks that live() agrees with the leases themselves, and
// that no message is both live and settled.
func checkCount(t *testing.T, tb *Table) {
	t.Helper()
	n := 0
	for seq, e := range tb.entries {
		if e.state == stateLive || e.state == stateSettling {
			n++
		}
		if _, ok := tb.settled[seq]; ok {
			t.Fatalf("message %d is both unsettled and settled", seq)
		}
	}
	if got := tb.Live(); got != n {
		t.Fatalf("live() = %d, but %d entries are not settled", got, n)
	}
}

func runSteps(t *testing.T, tb *Table, steps []step) {
	t.Helper()
	for i, s := range steps {
		t.Logf("step %d: %s", i, s.name)
		s.do(t, tb)
		checkCount(t, tb)
	}
}

func TestLeaseTable(t *testing.T) {
	tests := []struct {
		name  string
		steps []step // run on a table holding dlv1, live, deadline t0+30s
	}{
		{"begin on a live lease returns its ack subject and marks it settling", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			wantState(stateSettling),
			wantLive(1),
		}},
		{"a second begin while settling is refused", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			beginStep(dlv1, OpAck, time.Second, "", errs.ErrSettleInProgress),
			beginStep(dlv1, OpNak, time.Second, "", errs.ErrSettleInProgress),
			beginStep(dlv1, OpExtend, time.Second, "", errs.ErrSettleInProgress),
		}},
		{"finish ok settles; the same settle again is idempotent", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, 2*time.Second, 0),
			wantState(stateSettled),
			wantLive(0),
			beginStep(dlv1, OpAck, 3*time.Second, "", nil),
			beginStep(dlv1, OpAck, 3*time.Second, "", nil),
			wantState(stateSettled),
		}},
		{"an idempotent retry succeeds after the deadline, within retention", []step{
			beginStep(dlv1, OpTerm, time.Second, subj1, nil),
			finishStep(dlv1, OpTerm, true, 29*time.Second, 0),
			beginStep(dlv1, OpTerm, 45*time.Second, "", nil),
			sweepStep(45 * time.Second),
			beginStep(dlv1, OpTerm, 59*time.Second, "", nil),
		}},
		{"another settle after one is refused", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, time.Second, 0),
			beginStep(dlv1, OpNak, 2*time.Second, "", errs.ErrLeaseSettled),
			beginStep(dlv1, OpTerm, 2*time.Second, "", errs.ErrLeaseSettled),
			beginStep(dlv1, OpExtend, 2*time.Second, "", errs.ErrLeaseSettled),
			wantState(stateSettled),
		}},
		{"a Nak is idempotent too, and an Ack after it is refused", []step{
			beginStep(dlv1, OpNak, time.Second, subj1, nil),
			finishStep(dlv1, OpNak, true, time.Second, 0),
			beginStep(dlv1, OpNak, 2*time.Second, "", nil),
			beginStep(dlv1, OpAck, 2*time.Second, "", errs.ErrLeaseSettled),
		}},
		{"a failed settle leaves the lease live for a retry", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, false, 2*time.Second, 0),
			wantState(stateLive),
			wantLive(1),
			beginStep(dlv1, OpAck, 3*time.Second, subj1, nil),
			finishStep(dlv1, OpAck, false, 4*time.Second, 0),
			beginStep(dlv1, OpNak, 5*time.Second, subj1, nil),
			finishStep(dlv1, OpNak, true, 6*time.Second, 0),
			wantState(stateSettled),
		}},
		{"a failed settle does not outlive the deadline", []step{
			beginStep(dlv1, OpAck, 29*time.Second, subj1, nil),
			finishStep(dlv1, OpAck, false, 31*time.Second, 0),
			beginStep(dlv1, OpAck, 31*time.Second, "", errs.ErrLeaseExpired),
		}},
		{"begin at or after the deadline is expired", []step{
			beginStep(dlv1, OpAck, leaseTTL, "", errs.ErrLeaseExpired),
			beginStep(dlv1, OpNak, leaseTTL+time.Hour, "", errs.ErrLeaseExpired),
			wantState(stateLive),
			beginStep(dlv1, OpAck, leaseTTL-time.Millisecond, subj1, nil),
		}},
		{"a token of an older delivery is expired", []step{
			addStep(dlv2, subj2),
			wantLive(1),
			beginStep(dlv1, OpAck, time.Second, "", errs.ErrLeaseExpired),
			beginStep(dlv2, OpAck, time.Second, subj2, nil),
		}},
		{"a token of a delivery the table has not seen is expired", []step{
			beginStep(dlv2, OpAck, time.Second, "", errs.ErrLeaseExpired),
			beginStep(Lease{StreamSeq: seq + 1, Delivered: 1}, OpAck, time.Second, "", errs.ErrLeaseExpired),
		}},
		{"a newer delivery replaces a settling one, whose finish is then ignored", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			addStep(dlv2, subj2),
			wantState(stateLive),
			wantLive(1),
			finishStep(dlv1, OpAck, true, 2*time.Second, 0),
			wantState(stateLive),
			wantLive(1),
			beginStep(dlv2, OpNak, 3*time.Second, subj2, nil),
		}},
		{"a newer delivery replaces a settled one", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, time.Second, 0),
			wantLive(0),
			addStep(dlv2, subj2),
			wantLive(1),
			beginStep(dlv1, OpAck, 2*time.Second, "", errs.ErrLeaseExpired),
			beginStep(dlv2, OpAck, 2*time.Second, subj2, nil),
		}},
		{"an older delivery does not replace a newer one", []step{
			addStep(dlv2, subj2),
			addStep(dlv1, subj1),
			wantLive(1),
			beginStep(dlv1, OpAck, time.Second, "", errs.ErrLeaseExpired),
			beginStep(dlv2, OpAck, time.Second, subj2, nil),
		}},
		{"adopt does not overwrite a newer delivery", []step{
			addStep(dlv2, subj2),
			adoptStep(dlv1, subj1),
			wantLive(1),
			beginStep(dlv1, OpAck, time.Second, "", errs.ErrLeaseExpired),
			beginStep(dlv2, OpAck, time.Second, subj2, nil),
		}},
		{"adopt does not overwrite the same delivery, so a settled one stays settled", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, time.Second, 0),
			adoptStep(dlv1, "$JS.ACK.rebuilt"),
			wantState(stateSettled),
			wantLive(0),
			beginStep(dlv1, OpAck, 2*time.Second, "", nil),
			beginStep(dlv1, OpNak, 2*time.Second, "", errs.ErrLeaseSettled),
		}},
		{"adopt replaces an older delivery", []step{
			adoptStep(dlv2, subj2),
			wantLive(1),
			beginStep(dlv1, OpAck, time.Second, "", errs.ErrLeaseExpired),
			beginStep(dlv2, OpAck, time.Second, subj2, nil),
		}},
		{"adopting an Extend's token of the same delivery takes its later deadline", []step{
			beginStep(dlv1, OpAck, leaseTTL+time.Second, "", errs.ErrLeaseExpired),
			adoptStep(Lease{StreamSeq: seq, ConsumerSeq: 77, Delivered: 1, Deadline: at(leaseTTL + time.Minute)}, subj1),
			wantLive(1),
			beginStep(dlv1, OpAck, leaseTTL+time.Second, subj1, nil),
		}},
		{"adopting a token with an earlier deadline does not shorten the lease", []step{
			adoptStep(Lease{StreamSeq: seq, ConsumerSeq: 77, Delivered: 1, Deadline: at(time.Second)}, subj1),
			beginStep(dlv1, OpAck, 2*time.Second, subj1, nil),
		}},
		{"Extend keeps the lease live with its new deadline", []step{
			beginStep(dlv1, OpExtend, 20*time.Second, subj1, nil),
			finishStep(dlv1, OpExtend, true, 20*time.Second, 50*time.Second),
			wantState(stateLive),
			wantLive(1),
			sweepStep(40 * time.Second),
			wantState(stateLive),
			beginStep(dlv1, OpExtend, 45*time.Second, subj1, nil),
			finishStep(dlv1, OpExtend, true, 45*time.Second, 75*time.Second),
			beginStep(dlv1, OpAck, 74*time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, 74*time.Second, 0),
			beginStep(dlv1, OpExtend, 74*time.Second, "", errs.ErrLeaseSettled),
			beginStep(dlv1, OpAck, 75*time.Second, "", nil),
		}},
		{"a failed Extend keeps the old deadline", []step{
			beginStep(dlv1, OpExtend, 20*time.Second, subj1, nil),
			finishStep(dlv1, OpExtend, false, 20*time.Second, 50*time.Second),
			wantState(stateLive),
			beginStep(dlv1, OpAck, 35*time.Second, "", errs.ErrLeaseExpired),
		}},
		{"Extend is not idempotent on a settled lease", []step{
			beginStep(dlv1, OpTerm, time.Second, subj1, nil),
			finishStep(dlv1, OpTerm, true, time.Second, 0),
			beginStep(dlv1, OpExtend, 2*time.Second, "", errs.ErrLeaseSettled),
		}},
		{"a finish for another op is ignored", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpNak, true, time.Second, 0),
			wantState(stateSettling),
			finishStep(dlv1, OpAck, true, time.Second, 0),
			wantState(stateSettled),
		}},
		{"a finish without a begin is ignored", []step{
			finishStep(dlv1, OpAck, true, time.Second, 0),
			wantState(stateLive),
			wantLive(1),
		}},
		{"a settling lease is not swept, even past its deadline", []step{
			beginStep(dlv1, OpAck, 29*time.Second, subj1, nil),
			sweepStep(time.Hour),
			wantState(stateSettling),
			wantLive(1),
			finishStep(dlv1, OpAck, true, time.Hour, 0),
			wantLive(0),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := NewTable(retention)
			tb.Add(leaseOf(dlv1, subj1))
			runSteps(t, tb, tt.steps)
		})
	}
}

func TestLeaseTableSweep(t *testing.T) {
	tb := NewTable(retention)
	mk := func(s uint64, deadline time.Duration) Lease {
		return Lease{StreamSeq: s, ConsumerSeq: s, Delivered: 1, Deadline: at(deadline)}
	}
	live10, live20, live60 := mk(1, 10*time.Second), mk(2, 20*time.Second), mk(3, 60*time.Second)
	settled := mk(4, 60*time.Second) // settled at t0+5s: kept until t0+35s
	settling := mk(5, 10*time.Second)
	for _, c := range []Lease{live10, live20, live60, settled, settling} {
		tb.Add(leaseOf(c, fmt.Sprintf("subj.%d", c.StreamSeq)))
	}
	if _, _, err := tb.Begin(settled.Ref(), OpAck, at(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Finish(settled.Ref(), OpAck, true, at(5*time.Second), Extension{})
	if _, _, err := tb.Begin(settling.Ref(), OpNak, at(5*time.Second)); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		now      time.Duration
		wantSeqs []uint64 // in the table after the sweep
		wantLive int
	}{
		{0, []uint64{1, 2, 3, 4, 5}, 4},
		{10 * time.Second, []uint64{1, 2, 3, 4, 5}, 4}, // a deadline is not yet past at its instant
		{10*time.Second + time.Millisecond, []uint64{2, 3, 4, 5}, 3},
		{21 * time.Second, []uint64{3, 4, 5}, 2},
		{35 * time.Second, []uint64{3, 4, 5}, 2},
		{36 * time.Second, []uint64{3, 5}, 2}, // settled lease past retention
		{2 * time.Minute, []uint64{5}, 1},     // settling lease kept until its finish
	}
	for _, tt := range tests {
		tb.Sweep(at(tt.now))
		var got []uint64
		for s := uint64(1); s <= 5; s++ {
			if _, ok := stateOf(tb, s); ok {
				got = append(got, s)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.wantSeqs) {
			t.Errorf("after sweep(t0+%s): table holds %v, want %v", tt.now, got, tt.wantSeqs)
		}
		if n := tb.Live(); n != tt.wantLive {
			t.Errorf("after sweep(t0+%s): live() = %d, want %d", tt.now, n, tt.wantLive)
		}
		checkCount(t, tb)
	}
	// A settle of a lease swept after its retention is no longer a retry.
	if _, _, err := tb.Begin(settled.Ref(), OpAck, at(2*time.Minute)); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Errorf("begin on a swept settled lease = %v, want errs.ErrLeaseExpired", err)
	}
}

func TestLeaseTableLiveCount(t *testing.T) {
	tb := NewTable(retention)
	cs := make([]Lease, 10)
	for i := range cs {
		cs[i] = Lease{StreamSeq: uint64(i + 1), Delivered: 1, Deadline: at(time.Minute)}
		tb.Add(leaseOf(cs[i], "subj"))
	}
	if n := tb.Live(); n != 10 {
		t.Fatalf("live() = %d after 10 adds, want 10", n)
	}
	for i, c := range cs[:4] {
		if _, _, err := tb.Begin(c.Ref(), OpAck, at(time.Second)); err != nil {
			t.Fatal(err)
		}
		tb.Finish(c.Ref(), OpAck, i%2 == 0, at(time.Second), Extension{})
	}
	if n := tb.Live(); n != 8 {
		t.Errorf("live() = %d after 2 settled and 2 failed, want 8", n)
	}
	// Re-adding the same deliveries and newer ones does not double-count.
	for _, c := range cs {
		c.Delivered = 2
		tb.Add(leaseOf(c, "subj"))
		tb.Adopt(leaseOf(c, "subj"))
	}
	if n := tb.Live(); n != 10 {
		t.Errorf("live() = %d after redeliveries of all 10, want 10", n)
	}
	checkCount(t, tb)
}

// TestLeaseTableConcurrentBegin checks that of many concurrent settles of one
// lease exactly one is sent.
func TestLeaseTableConcurrentBegin(t *testing.T) {
	tb := NewTable(retention)
	tb.Add(leaseOf(dlv1, subj1))
	const n = 32
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		sent   int
		failed = map[error]int{}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := []Op{OpAck, OpNak, OpTerm, OpExtend}[i%4]
			subject, _, err := tb.Begin(dlv1.Ref(), op, at(time.Second))
			mu.Lock()
			defer mu.Unlock()
			if subject != "" {
				sent++
			}
			if err != nil {
				failed[err]++
			}
		}()
	}
	wg.Wait()
	if sent != 1 || failed[errs.ErrSettleInProgress] != n-1 {
		t.Errorf("%d begins sent, errors %v; want 1 sent and %d ErrSettleInProgress", sent, failed, n-1)
	}
}

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{OpAck: "ack", OpNak: "nak", OpTerm: "term", OpExtend: "extend", 0: "unknown", 99: "unknown"} {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", op, got, want)
		}
	}
}

func TestLeaseTableUnconfirmedSettleAllowsOnlyItsRetry(t *testing.T) {
	tb := NewTable(retention)
	c := Lease{StreamSeq: 7, ConsumerSeq: 7, Delivered: 1, Deadline: at(time.Minute)}
	tb.Add(leaseOf(c, "subj.7"))
	if _, retry, err := tb.Begin(c.Ref(), OpAck, at(time.Second)); err != nil || retry {
		t.Fatalf("the first ack: retry %v, %v", retry, err)
	}
	tb.Unsure(c.Ref(), OpAck) // sent, never confirmed: it may have been applied
	for _, op := range []Op{OpNak, OpTerm, OpExtend} {
		if _, _, err := tb.Begin(c.Ref(), op, at(2*time.Second)); !errors.Is(err, errs.ErrLeaseSettled) {
			t.Fatalf("%v after an unconfirmed ack: %v, want errs.ErrLeaseSettled", op, err)
		}
	}
	subj, retry, err := tb.Begin(c.Ref(), OpAck, at(2*time.Second))
	if err != nil || subj != "subj.7" || !retry {
		t.Fatalf("retrying the ack: %q %v, retry %v; want it told a retry (the ledger is asked first)", subj, err, retry)
	}
	tb.Finish(c.Ref(), OpAck, false, at(3*time.Second), Extension{}) // not sent this time: still unsure
	if _, _, err := tb.Begin(c.Ref(), OpNak, at(3*time.Second)); !errors.Is(err, errs.ErrLeaseSettled) {
		t.Fatalf("nak after a failed retry of an unconfirmed ack: %v", err)
	}
	if _, _, err := tb.Begin(c.Ref(), OpAck, at(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Finish(c.Ref(), OpAck, true, at(3*time.Second), Extension{})
	if subj, _, err := tb.Begin(c.Ref(), OpAck, at(4*time.Second)); err != nil || subj != "" {
		t.Fatalf("repeat of the confirmed ack: %q %v", subj, err)
	}
}

// A Nak that may have been applied is not sent again: applied, the server
// redelivered the message at once, and the second would land on that
// delivery (the settle ledger, which also says so, may have lost its record
// with a server killed hard). Its retry is done, unsent; others are refused.
func TestLeaseTableUnconfirmedNakIsNotSentAgain(t *testing.T) {
	tb := NewTable(retention)
	c := Lease{StreamSeq: 9, ConsumerSeq: 9, Delivered: 1, Deadline: at(time.Minute)}
	tb.Add(leaseOf(c, "subj.9"))
	if _, _, err := tb.Begin(c.Ref(), OpNak, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Unsure(c.Ref(), OpNak)
	if subj, _, err := tb.Begin(c.Ref(), OpNak, at(2*time.Second)); err != nil || subj != "" {
		t.Fatalf("retrying the unconfirmed nak: %q %v; want done, nothing to send", subj, err)
	}
	for _, op := range []Op{OpAck, OpTerm, OpExtend} {
		if _, _, err := tb.Begin(c.Ref(), op, at(2*time.Second)); !errors.Is(err, errs.ErrLeaseSettled) {
			t.Fatalf("%v after an unconfirmed nak: %v, want errs.ErrLeaseSettled", op, err)
		}
	}
}

func TestLeaseTableUnconfirmedExtendChangesNothing(t *testing.T) {
	tb := NewTable(retention)
	c := Lease{StreamSeq: 8, ConsumerSeq: 8, Delivered: 1, Deadline: at(time.Minute)}
	tb.Add(leaseOf(c, "subj.8"))
	if _, _, err := tb.Begin(c.Ref(), OpExtend, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.Unsure(c.Ref(), OpExtend)
	if subj, _, err := tb.Begin(c.Ref(), OpAck, at(2*time.Second)); err != nil || subj == "" {
		t.Fatalf("ack after an unconfirmed extend: %q %v", subj, err)
	}
}

// Overdue names, of the settles begun, those whose lease's deadline has
// passed, and makes them live again for the sweep; those in time, another
// op's, and leases not begun stay as they were.
func TestLeaseTableOverdue(t *testing.T) {
	tb := NewTable(retention)
	mk := func(s uint64, deadline time.Duration) Lease {
		return Lease{StreamSeq: s, ConsumerSeq: s, Delivered: 1, Deadline: at(deadline), AckSubject: fmt.Sprintf("subj.%d", s)}
	}
	early, late, other, idle := mk(1, 10*time.Second), mk(2, 60*time.Second), mk(3, 10*time.Second), mk(4, 10*time.Second)
	for _, l := range []Lease{early, late, other, idle} {
		tb.Add(l)
	}
	for _, b := range []struct {
		l  Lease
		op Op
	}{{early, OpAck}, {late, OpAck}, {other, OpNak}} {
		if _, _, err := tb.Begin(b.l.Ref(), b.op, at(5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	rs := []Ref{early.Ref(), late.Ref(), other.Ref(), idle.Ref()}
	if got := tb.Overdue(rs, OpAck, at(10*time.Second-time.Millisecond)); len(got) != 0 {
		t.Errorf("Overdue before any deadline: %v", got)
	}
	if got := tb.Overdue(rs, OpAck, at(10*time.Second)); fmt.Sprint(got) != "[0]" {
		t.Errorf("Overdue at the first deadline: %v; want [0]", got)
	}
	if st, _ := stateOf(tb, early.StreamSeq); st != stateLive {
		t.Errorf("the overdue lease is %v; want live again", st)
	}
	if st, _ := stateOf(tb, other.StreamSeq); st != stateSettling {
		t.Errorf("a Nak begun is %v after an Overdue of Acks; want settling", st)
	}
	if _, _, err := tb.Begin(early.Ref(), OpAck, at(10*time.Second)); !errors.Is(err, errs.ErrLeaseExpired) {
		t.Errorf("begin of the overdue lease: %v; want LEASE_EXPIRED", err)
	}
	tb.Sweep(at(11 * time.Second))
	if _, ok := stateOf(tb, early.StreamSeq); ok {
		t.Error("the sweep kept the overdue lease")
	}
	checkCount(t, tb)
}

// Holds: a live lease before its deadline; not one being acked, nor one
// past its deadline; but one being extended, whatever its deadline, for
// the Extend may yet land (a pusher drops a job its replica does not hold,
// and one dropped as its Extend lands would be kept alive unpushed).
func TestLeaseTableHolds(t *testing.T) {
	tb := NewTable(retention)
	live := Lease{StreamSeq: 1, ConsumerSeq: 1, Delivered: 1, Deadline: at(10 * time.Second), AckSubject: "subj.1"}
	acked := Lease{StreamSeq: 2, ConsumerSeq: 2, Delivered: 1, Deadline: at(10 * time.Second), AckSubject: "subj.2"}
	extended := Lease{StreamSeq: 3, ConsumerSeq: 3, Delivered: 1, Deadline: at(10 * time.Second), AckSubject: "subj.3"}
	for _, l := range []Lease{live, acked, extended} {
		tb.Add(l)
	}
	if _, _, err := tb.Begin(acked.Ref(), OpAck, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tb.Begin(extended.Ref(), OpExtend, at(9*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		r    Ref
		now  time.Time
		want bool
	}{
		{"live, before its deadline", live.Ref(), at(5 * time.Second), true},
		{"live, at its deadline", live.Ref(), at(10 * time.Second), false},
		{"being acked", acked.Ref(), at(5 * time.Second), false},
		{"being extended, before its deadline", extended.Ref(), at(5 * time.Second), true},
		{"being extended, past its deadline", extended.Ref(), at(11 * time.Second), true},
		{"not in the table", Ref{StreamSeq: 4, Delivered: 1}, at(5 * time.Second), false},
	} {
		if got := tb.Holds(c.r, c.now); got != c.want {
			t.Errorf("Holds of a lease %s: %v; want %v", c.what, got, c.want)
		}
	}
	tb.Finish(extended.Ref(), OpExtend, false, at(11*time.Second), Extension{})
	if tb.Holds(extended.Ref(), at(11*time.Second)) {
		t.Error("Holds of a lease whose Extend failed past its deadline: true; want false")
	}
}
