package server_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A prioritized consumer's pull of priority 0 asks no info once its marks
// reach max_waiting, though they are out of date (replica A received 40
// while B made 100 more): the server hands a seek's replay to the pulls of
// priority 0 in turn, so the replay reaches A's, behind B's 8, numbered 9,
// within its marks. It shows the reset and is leased, every message of the
// replay handed out once.
func TestASeekReplaysToAPriorityZeroFetchMarkedPastMaxWaiting(t *testing.T) {
	const ahead = 8
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "ranked", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPrioritized, MaxWaiting: 40}, 2)
	a, b := o.replicas[0], o.replicas[1]
	fetchAll := func(c jetgatev1.ConsumerServiceClient, n int) {
		t.Helper()
		for got := 0; got < n; {
			r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: int32(n - got), Expires: durationpb.New(2 * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			ackEach(t, o.harness, c, o.name, r.GetMessages())
			got += len(r.GetMessages())
		}
	}
	seqs := o.publish(40)
	fetchAll(a, 40) // A's marks: 40, at max_waiting
	seqs = append(seqs, o.publish(100)...)
	fetchAll(b, 100) // the server's count: 140

	var first []<-chan *jetgatev1.FetchResponse
	for i := range ahead {
		first = append(first, o.waitingOn(b, o.name, &jetgatev1.FetchRequest{Batch: 1}, i+1))
	}
	rest := o.waitingOn(a, o.name, &jetgatev1.FetchRequest{Batch: 200}, ahead+1)
	if _, err := b.Seek(o.ctx(), &jetgatev1.SeekRequest{Stream: stream, Consumer: o.name,
		Target: &jetgatev1.SeekRequest_Sequence{Sequence: seqs[0]}}); err != nil {
		t.Fatalf("seek to the start: %v", err)
	}
	got := collect(append(first, rest))
	t.Logf("the waiting fetches brought %d; num_ack_pending %d", len(got), o.info(o.name).NumAckPending)
	// A Fetch answers once its first messages lingered: under load the
	// rest of the replay came after A's answered, to its pull, and waits in
	// its replica for the next Fetch. One dropped unleased would not come
	// again before ack_wait.
	for len(got) < len(seqs) {
		r, err := o.fetch(t, a, &jetgatev1.FetchRequest{Batch: int32(len(seqs) - len(got)), Expires: durationpb.New(2 * time.Second)})
		if err != nil || len(r.GetMessages()) == 0 {
			break
		}
		got = append(got, r.GetMessages()...)
	}
	wantEach(t, got, seqs)
	ackEach(t, o.harness, b, o.name, got) // A's tokens and B's alike
	if ci := o.info(o.name); ci.NumAckPending != 0 {
		t.Errorf("num_ack_pending %d once the replay was acked, want 0", ci.NumAckPending)
	}
}
