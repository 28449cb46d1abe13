package deadletter

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A Term's record alone makes its dead letter, as the server's advisory
// would: the advisory of a Term applied just before the server shut down
// may never be stored.
func TestATermsRecordAloneIsDeadLettered(t *testing.T) {
	e := newEnv(t)
	e.start(true)
	seq := e.publish("payload")
	other := e.publish("another")
	e.next() // delivered once, and not terminated: the record is what the worker trusts
	if err := RecordTerms(context.Background(), e.js, "", "ORDERS", "billing", " malformed ", []Termed{{StreamSeq: seq, Deliveries: 1}, {StreamSeq: other, Deliveries: 2}}); err != nil {
		t.Fatal(err)
	}
	e.workedOff(1) // one record of both Terms
	dls := e.deadLetters()
	if len(dls) != 2 {
		t.Fatalf("%d dead letters after a record of two Terms, want 2", len(dls))
	}
	for k, want := range map[string]string{
		HeaderStream: "ORDERS", HeaderConsumer: "billing", HeaderSeq: strconv.FormatUint(seq, 10),
		HeaderDeliveries: "1", HeaderReason: ReasonTerminated, HeaderTermReason: "malformed", HeaderSubject: "orders.1",
	} {
		if got := dls[0].Header.Get(k); got != want {
			t.Errorf("dead letter header %s = %q, want %q", k, got, want)
		}
	}
	if string(dls[0].Data) != "payload" {
		t.Errorf("dead letter data %q, want the original's", dls[0].Data)
	}
	if got := dls[1].Header.Get(HeaderSeq) + " " + dls[1].Header.Get(HeaderDeliveries) + " " + string(dls[1].Data); got != strconv.FormatUint(other, 10)+" 2 another" {
		t.Errorf("the second dead letter is %q; want seq %d, 2 deliveries, its data", got, other)
	}
}

// A Term both recorded and advised is one dead letter, counted once; the
// record made again is stored once.
func TestATermRecordedAndAdvisedIsOneDeadLetter(t *testing.T) {
	e := newEnv(t)
	copied := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "copied"}, []string{"stream", "consumer", "reason"})
	ctx := context.Background()
	w, err := Start(ctx, Options{JS: e.js, Routes: []Route{{Stream: "ORDERS", Consumer: "billing", Subject: dlqSubject, OnTerm: true}},
		Log: slog.New(slog.DiscardHandler), Copied: copied})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	advised := e.termAdvisories()
	e.publish("payload")
	seq := e.term() // the server's advisory
	select {
	case <-advised: // sent, and so captured before the records (one server, in order)
	case <-time.After(within):
		t.Fatal("no MSG_TERMINATED advisory seen")
	}
	for range 2 {
		if err := RecordTerms(ctx, e.js, "", "ORDERS", "billing", "malformed", []Termed{{StreamSeq: seq, Deliveries: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	e.workedOff(2)
	if st := e.streamState(AdvisoryStream); st.LastSeq != 2 {
		t.Fatalf("%d advisories and records captured, want 2: the record made again is stored once", st.LastSeq)
	}
	if dls := e.deadLetters(); len(dls) != 1 {
		t.Fatalf("%d dead letters of one Term recorded and advised, want 1: %v", len(dls), headersOf(dls))
	}
	if n := testutil.ToFloat64(copied.WithLabelValues("ORDERS", "billing", ReasonTerminated)); n != 1 {
		t.Fatalf("%v dead letters counted, want 1", n)
	}
}

// Without on_term no record is captured, and one stored all the same (the
// advisory stream kept the subject from a time on_term was set) is dropped.
// Where nothing captures records at all, RecordTerms fails: nothing stored
// it.
func TestATermsRecordWithoutOnTerm(t *testing.T) {
	e := newEnv(t)
	seq := e.publish("payload")
	if err := RecordTerms(context.Background(), e.js, "", "ORDERS", "billing", "", []Termed{{StreamSeq: seq, Deliveries: 1}}); err == nil {
		t.Fatal("a record stored with no advisory stream")
	}
	stop := e.start(true)
	stop()
	e.start(false)
	if err := RecordTerms(context.Background(), e.js, "", "ORDERS", "billing", "", []Termed{{StreamSeq: seq, Deliveries: 1}}); err != nil {
		t.Fatal(err)
	}
	e.workedOff(1)
	if dls := e.deadLetters(); len(dls) != 0 {
		t.Fatalf("dead letters %v with on_term unset; want none", headersOf(dls))
	}
}

// The worker remembers the last recentIDs dead letters it stored, and no
// more, each for recentFor: a later dead letter of the same sequence (its
// stream made again, its consumer reset) is not taken for one stored.
func TestRecentLettersAreBounded(t *testing.T) {
	var r recentLetters
	t0 := time.Now()
	for i := range recentIDs + 1 {
		r.add(strconv.Itoa(i), t0)
	}
	r.add("1", t0) // known: no new slot
	if r.has("0", t0) || !r.has("1", t0) || !r.has(strconv.Itoa(recentIDs), t0) || len(r.ids) != recentIDs {
		t.Fatalf("after %d ids: has 0 %v, has 1 %v, has the last %v, holds %d; want the first forgotten, the rest held",
			recentIDs+1, r.has("0", t0), r.has("1", t0), r.has(strconv.Itoa(recentIDs), t0), len(r.ids))
	}
	later := t0.Add(recentFor)
	r.add("2", later) // stored again: held from then
	if r.has("1", later) || !r.has("2", later) {
		t.Errorf("after recentFor: has 1 %v, has 2 (stored again) %v; want 1 forgotten, 2 held", r.has("1", later), r.has("2", later))
	}
}

// A record of another JetStream domain's consumer of the same names makes
// no dead letter: records cross a leaf node as the server's advisories do,
// and this worker's consumer never gave the message up.
func TestARecordOfAnotherDomainIsNotDeadLettered(t *testing.T) {
	e := newEnv(t)
	e.start(true)
	seq := e.publish("payload")
	if err := RecordTerms(context.Background(), e.js, "leaf", "ORDERS", "billing", "malformed", []Termed{{StreamSeq: seq, Deliveries: 1}}); err != nil {
		t.Fatal(err)
	}
	e.workedOff(1)
	if dls := e.deadLetters(); len(dls) != 0 {
		t.Fatalf("%d dead letters of another domain's record; want none", len(dls))
	}
}
