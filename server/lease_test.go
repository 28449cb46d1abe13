package server

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
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

// Claims of the first and second delivery of message seq.
var (
	dlv1 = claims{streamSeq: seq, consumerSeq: 77, delivered: 1, deadline: t0.Add(leaseTTL)}
	dlv2 = claims{streamSeq: seq, consumerSeq: 78, delivered: 2, deadline: t0.Add(90 * time.Second)}
)

func at(d time.Duration) time.Time { return t0.Add(d) }

func leaseOf(c claims, subject string) *lease {
	return &lease{
		streamSeq:   c.streamSeq,
		consumerSeq: c.consumerSeq,
		delivered:   c.delivered,
		deadline:    c.deadline,
		ackSubject:  subject,
	}
}

// step is one call on a lease table in a scenario.
type step struct {
	name string
	do   func(t *testing.T, tb *leaseTable)
}

func addStep(c claims, subject string) step {
	return step{fmt.Sprintf("add(delivered %d)", c.delivered), func(t *testing.T, tb *leaseTable) {
		tb.add(leaseOf(c, subject))
	}}
}

func adoptStep(c claims, subject string) step {
	return step{fmt.Sprintf("adopt(delivered %d)", c.delivered), func(t *testing.T, tb *leaseTable) {
		tb.adopt(c, subject)
	}}
}

func beginStep(c claims, op SettleOp, now time.Duration, wantSubject string, wantErr error) step {
	return step{fmt.Sprintf("begin(delivered %d, %s, t0+%s)", c.delivered, op, now), func(t *testing.T, tb *leaseTable) {
		t.Helper()
		got, err := tb.begin(c, op, at(now))
		if got != wantSubject || !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
			t.Fatalf("begin = %q, %v; want %q, %v", got, err, wantSubject, wantErr)
		}
	}}
}

func finishStep(c claims, op SettleOp, ok bool, now, newDeadline time.Duration) step {
	return step{fmt.Sprintf("finish(delivered %d, %s, ok %t, t0+%s)", c.delivered, op, ok, now), func(t *testing.T, tb *leaseTable) {
		tb.finish(c, op, ok, at(now), at(newDeadline))
	}}
}

func sweepStep(now time.Duration) step {
	return step{fmt.Sprintf("sweep(t0+%s)", now), func(t *testing.T, tb *leaseTable) {
		tb.sweep(at(now))
	}}
}

func wantState(s leaseState) step {
	return step{fmt.Sprintf("want state %d", s), func(t *testing.T, tb *leaseTable) {
		t.Helper()
		l, ok := tb.leases[seq]
		if !ok {
			t.Fatalf("lease %d is not in the table", seq)
		}
		if l.state != s {
			t.Fatalf("lease state = %d, want %d", l.state, s)
		}
	}}
}

func wantLive(n int) step {
	return step{fmt.Sprintf("want live %d", n), func(t *testing.T, tb *leaseTable) {
		t.Helper()
		if got := tb.live(); got != n {
			t.Fatalf("live() = %d, want %d", got, n)
		}
	}}
}

// checkCount checks that live() agrees with the entries themselves.
func checkCount(t *testing.T, tb *leaseTable) {
	t.Helper()
	n := 0
	for _, l := range tb.leases {
		if l.state != leaseSettled {
			n++
		}
	}
	if got := tb.live(); got != n {
		t.Fatalf("live() = %d, but %d entries are not settled", got, n)
	}
}

func runSteps(t *testing.T, tb *leaseTable, steps []step) {
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
			wantState(leaseSettling),
			wantLive(1),
		}},
		{"a second begin while settling is refused", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			beginStep(dlv1, OpAck, time.Second, "", ErrSettleInProgress),
			beginStep(dlv1, OpNak, time.Second, "", ErrSettleInProgress),
			beginStep(dlv1, OpExtend, time.Second, "", ErrSettleInProgress),
		}},
		{"finish ok settles; the same settle again is idempotent", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, 2*time.Second, 0),
			wantState(leaseSettled),
			wantLive(0),
			beginStep(dlv1, OpAck, 3*time.Second, "", nil),
			beginStep(dlv1, OpAck, 3*time.Second, "", nil),
			wantState(leaseSettled),
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
			beginStep(dlv1, OpNak, 2*time.Second, "", ErrLeaseSettled),
			beginStep(dlv1, OpTerm, 2*time.Second, "", ErrLeaseSettled),
			beginStep(dlv1, OpExtend, 2*time.Second, "", ErrLeaseSettled),
			wantState(leaseSettled),
		}},
		{"a Nak is idempotent too, and an Ack after it is refused", []step{
			beginStep(dlv1, OpNak, time.Second, subj1, nil),
			finishStep(dlv1, OpNak, true, time.Second, 0),
			beginStep(dlv1, OpNak, 2*time.Second, "", nil),
			beginStep(dlv1, OpAck, 2*time.Second, "", ErrLeaseSettled),
		}},
		{"a failed settle leaves the lease live for a retry", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, false, 2*time.Second, 0),
			wantState(leaseLive),
			wantLive(1),
			beginStep(dlv1, OpAck, 3*time.Second, subj1, nil),
			finishStep(dlv1, OpAck, false, 4*time.Second, 0),
			beginStep(dlv1, OpNak, 5*time.Second, subj1, nil),
			finishStep(dlv1, OpNak, true, 6*time.Second, 0),
			wantState(leaseSettled),
		}},
		{"a failed settle does not outlive the deadline", []step{
			beginStep(dlv1, OpAck, 29*time.Second, subj1, nil),
			finishStep(dlv1, OpAck, false, 31*time.Second, 0),
			beginStep(dlv1, OpAck, 31*time.Second, "", ErrLeaseExpired),
		}},
		{"begin at or after the deadline is expired", []step{
			beginStep(dlv1, OpAck, leaseTTL, "", ErrLeaseExpired),
			beginStep(dlv1, OpNak, leaseTTL+time.Hour, "", ErrLeaseExpired),
			wantState(leaseLive),
			beginStep(dlv1, OpAck, leaseTTL-time.Millisecond, subj1, nil),
		}},
		{"a token of an older delivery is expired", []step{
			addStep(dlv2, subj2),
			wantLive(1),
			beginStep(dlv1, OpAck, time.Second, "", ErrLeaseExpired),
			beginStep(dlv2, OpAck, time.Second, subj2, nil),
		}},
		{"a token of a delivery the table has not seen is expired", []step{
			beginStep(dlv2, OpAck, time.Second, "", ErrLeaseExpired),
			beginStep(claims{streamSeq: seq + 1, delivered: 1}, OpAck, time.Second, "", ErrLeaseExpired),
		}},
		{"a newer delivery replaces a settling one, whose finish is then ignored", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			addStep(dlv2, subj2),
			wantState(leaseLive),
			wantLive(1),
			finishStep(dlv1, OpAck, true, 2*time.Second, 0),
			wantState(leaseLive),
			wantLive(1),
			beginStep(dlv2, OpNak, 3*time.Second, subj2, nil),
		}},
		{"a newer delivery replaces a settled one", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, time.Second, 0),
			wantLive(0),
			addStep(dlv2, subj2),
			wantLive(1),
			beginStep(dlv1, OpAck, 2*time.Second, "", ErrLeaseExpired),
			beginStep(dlv2, OpAck, 2*time.Second, subj2, nil),
		}},
		{"an older delivery does not replace a newer one", []step{
			addStep(dlv2, subj2),
			addStep(dlv1, subj1),
			wantLive(1),
			beginStep(dlv1, OpAck, time.Second, "", ErrLeaseExpired),
			beginStep(dlv2, OpAck, time.Second, subj2, nil),
		}},
		{"adopt does not overwrite a newer delivery", []step{
			addStep(dlv2, subj2),
			adoptStep(dlv1, subj1),
			wantLive(1),
			beginStep(dlv1, OpAck, time.Second, "", ErrLeaseExpired),
			beginStep(dlv2, OpAck, time.Second, subj2, nil),
		}},
		{"adopt does not overwrite the same delivery, so a settled one stays settled", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, time.Second, 0),
			adoptStep(dlv1, "$JS.ACK.rebuilt"),
			wantState(leaseSettled),
			wantLive(0),
			beginStep(dlv1, OpAck, 2*time.Second, "", nil),
			beginStep(dlv1, OpNak, 2*time.Second, "", ErrLeaseSettled),
		}},
		{"adopt replaces an older delivery", []step{
			adoptStep(dlv2, subj2),
			wantLive(1),
			beginStep(dlv1, OpAck, time.Second, "", ErrLeaseExpired),
			beginStep(dlv2, OpAck, time.Second, subj2, nil),
		}},
		{"Extend keeps the lease live with its new deadline", []step{
			beginStep(dlv1, OpExtend, 20*time.Second, subj1, nil),
			finishStep(dlv1, OpExtend, true, 20*time.Second, 50*time.Second),
			wantState(leaseLive),
			wantLive(1),
			sweepStep(40 * time.Second),
			wantState(leaseLive),
			beginStep(dlv1, OpExtend, 45*time.Second, subj1, nil),
			finishStep(dlv1, OpExtend, true, 45*time.Second, 75*time.Second),
			beginStep(dlv1, OpAck, 74*time.Second, subj1, nil),
			finishStep(dlv1, OpAck, true, 74*time.Second, 0),
			beginStep(dlv1, OpExtend, 74*time.Second, "", ErrLeaseSettled),
			beginStep(dlv1, OpAck, 75*time.Second, "", nil),
		}},
		{"a failed Extend keeps the old deadline", []step{
			beginStep(dlv1, OpExtend, 20*time.Second, subj1, nil),
			finishStep(dlv1, OpExtend, false, 20*time.Second, 50*time.Second),
			wantState(leaseLive),
			beginStep(dlv1, OpAck, 35*time.Second, "", ErrLeaseExpired),
		}},
		{"Extend is not idempotent on a settled lease", []step{
			beginStep(dlv1, OpTerm, time.Second, subj1, nil),
			finishStep(dlv1, OpTerm, true, time.Second, 0),
			beginStep(dlv1, OpExtend, 2*time.Second, "", ErrLeaseSettled),
		}},
		{"a finish for another op is ignored", []step{
			beginStep(dlv1, OpAck, time.Second, subj1, nil),
			finishStep(dlv1, OpNak, true, time.Second, 0),
			wantState(leaseSettling),
			finishStep(dlv1, OpAck, true, time.Second, 0),
			wantState(leaseSettled),
		}},
		{"a finish without a begin is ignored", []step{
			finishStep(dlv1, OpAck, true, time.Second, 0),
			wantState(leaseLive),
			wantLive(1),
		}},
		{"a settling lease is not swept, even past its deadline", []step{
			beginStep(dlv1, OpAck, 29*time.Second, subj1, nil),
			sweepStep(time.Hour),
			wantState(leaseSettling),
			wantLive(1),
			finishStep(dlv1, OpAck, true, time.Hour, 0),
			wantLive(0),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newLeaseTable(retention)
			tb.add(leaseOf(dlv1, subj1))
			runSteps(t, tb, tt.steps)
		})
	}
}

func TestLeaseTableSweep(t *testing.T) {
	tb := newLeaseTable(retention)
	mk := func(s uint64, deadline time.Duration) claims {
		return claims{streamSeq: s, consumerSeq: s, delivered: 1, deadline: at(deadline)}
	}
	live10, live20, live60 := mk(1, 10*time.Second), mk(2, 20*time.Second), mk(3, 60*time.Second)
	settled := mk(4, 60*time.Second) // settled at t0+5s: kept until t0+35s
	settling := mk(5, 10*time.Second)
	for _, c := range []claims{live10, live20, live60, settled, settling} {
		tb.add(leaseOf(c, fmt.Sprintf("subj.%d", c.streamSeq)))
	}
	if _, err := tb.begin(settled, OpAck, at(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.finish(settled, OpAck, true, at(5*time.Second), time.Time{})
	if _, err := tb.begin(settling, OpNak, at(5*time.Second)); err != nil {
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
		tb.sweep(at(tt.now))
		var got []uint64
		for s := uint64(1); s <= 5; s++ {
			if _, ok := tb.leases[s]; ok {
				got = append(got, s)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.wantSeqs) {
			t.Errorf("after sweep(t0+%s): table holds %v, want %v", tt.now, got, tt.wantSeqs)
		}
		if n := tb.live(); n != tt.wantLive {
			t.Errorf("after sweep(t0+%s): live() = %d, want %d", tt.now, n, tt.wantLive)
		}
		checkCount(t, tb)
	}
	// A settle of a lease swept after its retention is no longer a retry.
	if _, err := tb.begin(settled, OpAck, at(2*time.Minute)); !errors.Is(err, ErrLeaseExpired) {
		t.Errorf("begin on a swept settled lease = %v, want ErrLeaseExpired", err)
	}
}

func TestLeaseTableLiveCount(t *testing.T) {
	tb := newLeaseTable(retention)
	cs := make([]claims, 10)
	for i := range cs {
		cs[i] = claims{streamSeq: uint64(i + 1), delivered: 1, deadline: at(time.Minute)}
		tb.add(leaseOf(cs[i], "subj"))
	}
	if n := tb.live(); n != 10 {
		t.Fatalf("live() = %d after 10 adds, want 10", n)
	}
	for i, c := range cs[:4] {
		if _, err := tb.begin(c, OpAck, at(time.Second)); err != nil {
			t.Fatal(err)
		}
		tb.finish(c, OpAck, i%2 == 0, at(time.Second), time.Time{})
	}
	if n := tb.live(); n != 8 {
		t.Errorf("live() = %d after 2 settled and 2 failed, want 8", n)
	}
	// Re-adding the same deliveries and newer ones does not double-count.
	for _, c := range cs {
		c.delivered = 2
		tb.add(leaseOf(c, "subj"))
		tb.adopt(c, "subj")
	}
	if n := tb.live(); n != 10 {
		t.Errorf("live() = %d after redeliveries of all 10, want 10", n)
	}
	checkCount(t, tb)
}

// TestLeaseTableConcurrentBegin checks that of many concurrent settles of one
// lease exactly one is sent.
func TestLeaseTableConcurrentBegin(t *testing.T) {
	tb := newLeaseTable(retention)
	tb.add(leaseOf(dlv1, subj1))
	const n = 32
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		sent int
		errs = map[error]int{}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := []SettleOp{OpAck, OpNak, OpTerm, OpExtend}[i%4]
			subject, err := tb.begin(dlv1, op, at(time.Second))
			mu.Lock()
			defer mu.Unlock()
			if subject != "" {
				sent++
			}
			if err != nil {
				errs[err]++
			}
		}()
	}
	wg.Wait()
	if sent != 1 || errs[ErrSettleInProgress] != n-1 {
		t.Errorf("%d begins sent, errors %v; want 1 sent and %d ErrSettleInProgress", sent, errs, n-1)
	}
}

func TestSettleOpString(t *testing.T) {
	for op, want := range map[SettleOp]string{OpAck: "ack", OpNak: "nak", OpTerm: "term", OpExtend: "extend", 0: "unknown", 99: "unknown"} {
		if got := op.String(); got != want {
			t.Errorf("SettleOp(%d).String() = %q, want %q", op, got, want)
		}
	}
}

func TestLeaseTableUnconfirmedSettleAllowsOnlyItsRetry(t *testing.T) {
	tb := newLeaseTable(retention)
	c := claims{streamSeq: 7, consumerSeq: 7, delivered: 1, deadline: at(time.Minute)}
	tb.add(leaseOf(c, "subj.7"))
	if _, err := tb.begin(c, OpNak, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.unsure(c, OpNak) // sent, never confirmed: it may have been applied
	for _, op := range []SettleOp{OpAck, OpTerm, OpExtend} {
		if _, err := tb.begin(c, op, at(2*time.Second)); !errors.Is(err, ErrLeaseSettled) {
			t.Fatalf("%v after an unconfirmed nak: %v, want ErrLeaseSettled", op, err)
		}
	}
	subj, err := tb.begin(c, OpNak, at(2*time.Second))
	if err != nil || subj != "subj.7" {
		t.Fatalf("retrying the nak: %q %v", subj, err)
	}
	tb.finish(c, OpNak, false, at(3*time.Second), time.Time{}) // not sent this time: still unsure
	if _, err := tb.begin(c, OpAck, at(3*time.Second)); !errors.Is(err, ErrLeaseSettled) {
		t.Fatalf("ack after a failed retry of an unconfirmed nak: %v", err)
	}
	if _, err := tb.begin(c, OpNak, at(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.finish(c, OpNak, true, at(3*time.Second), time.Time{})
	if subj, err := tb.begin(c, OpNak, at(4*time.Second)); err != nil || subj != "" {
		t.Fatalf("repeat of the confirmed nak: %q %v", subj, err)
	}
}

func TestLeaseTableUnconfirmedExtendChangesNothing(t *testing.T) {
	tb := newLeaseTable(retention)
	c := claims{streamSeq: 8, consumerSeq: 8, delivered: 1, deadline: at(time.Minute)}
	tb.add(leaseOf(c, "subj.8"))
	if _, err := tb.begin(c, OpExtend, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	tb.unsure(c, OpExtend)
	if subj, err := tb.begin(c, OpAck, at(2*time.Second)); err != nil || subj == "" {
		t.Fatalf("ack after an unconfirmed extend: %q %v", subj, err)
	}
}
