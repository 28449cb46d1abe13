package reliability

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

// TestFaultTermsThroughANATSRestartAreDeadLettered terms messages, ten to
// an RPC and many RPCs at once, while the NATS server shuts down and starts
// again. Every Term the gateway confirmed has its dead letter. The server
// answers a Term before it sends the Term's advisory, and drops what it has
// not sent as it shuts down: without the gateway's own record of each
// confirmed Term, 711 of 2,360 confirmed Terms had none.
func TestFaultTermsThroughANATSRestartAreDeadLettered(t *testing.T) {
	dir := t.TempDir()
	ns := natstest.StartIn(t, dir, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	nc := natstest.Connect(t, ns, reconnecting()...)
	natstest.Stream(t, nc, stream, "orders.>")
	natstest.Stream(t, nc, "DEAD", "dead.>")
	n := scale(3000, 20000)
	g := gwtest.Start(t, replica.Options{
		Conn: natstest.Connect(t, ns, reconnecting()...),
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer, AckWait: 10 * time.Minute, MaxAckPending: n, // every message leased at once, none redelivered
			DeadLetter: &coreconsumer.DeadLetter{Subject: "dead.billing", OnTerm: true}}},
		Keys:           token.RandomKeyring(),
		RequestTimeout: time.Second,
		Logger:         testLogger(t),
	})
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(scale(2, 8))*time.Minute)
	defer cancel()
	for i := range n {
		if _, err := js.Publish(ctx, "orders.term", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	var tokens []string
	var seqs []uint64 // of the tokens
	for len(tokens) < n {
		resp, err := g.Consumers.Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 500, Expires: durationpb.New(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range resp.GetMessages() {
			tokens, seqs = append(tokens, m.GetToken()), append(seqs, m.GetMetadata().GetStreamSeq())
		}
	}

	// Terms of 10 tokens each, 64 at a time; the server stops once a third
	// of the messages is confirmed terminated.
	const per = 10
	var (
		mu        sync.Mutex
		confirmed []uint64 // stream sequences
		next      atomic.Int64
		wg        sync.WaitGroup
		stopAt    = make(chan struct{})
		stopOnce  sync.Once
	)
	term := func(from int) {
		to := min(from+per, n)
		resp, err := g.Consumers.Term(ctx, &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: tokens[from:to], Reason: "bad"})
		if err != nil {
			return
		}
		failed := map[int]bool{}
		for _, f := range resp.GetFailures() {
			failed[int(f.GetIndex())] = true
		}
		mu.Lock()
		defer mu.Unlock()
		for i := from; i < to; i++ {
			if !failed[i-from] {
				confirmed = append(confirmed, seqs[i])
			}
		}
		if len(confirmed) >= n/3 {
			stopOnce.Do(func() { close(stopAt) })
		}
	}
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := int(next.Add(per) - per); from < n; from = int(next.Add(per) - per) {
				term(from)
			}
		}()
	}
	select {
	case <-stopAt:
	case <-ctx.Done():
		t.Fatalf("fewer than %d of %d Terms confirmed", n/3, n)
	}
	mu.Lock()
	before := len(confirmed)
	mu.Unlock()
	ns.Shutdown()
	ns.WaitForShutdown()
	natstest.StartIn(t, dir, port) // on the same store and port: the replica reconnects
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(confirmed) == before {
		t.Fatalf("no Term confirmed after the restart (%d before it): the restart was not mid-traffic", before)
	}
	var missing []uint64
	var dead map[uint64]int // dead letters by stream sequence
	defer func() {
		if len(missing) > 0 {
			t.Logf("%d of %d confirmed Terms without a dead letter, first %v", len(missing), len(confirmed), missing[:min(len(missing), 10)])
			logDeadLetterState(t, js)
		}
	}()
	natstest.Eventually(t, time.Duration(scale(1, 3))*time.Minute, "a dead letter of every confirmed Term", func() bool {
		dead = map[uint64]int{}
		for _, m := range natstest.StreamMsgs(t, js, "DEAD", "dead.billing") {
			seq, _ := strconv.ParseUint(m.Header.Get("Jetgate-Dead-Seq"), 10, 64)
			dead[seq]++
		}
		missing = slices.DeleteFunc(slices.Clone(confirmed), func(seq uint64) bool { return dead[seq] > 0 })
		return len(missing) == 0
	})
	for seq, copies := range dead {
		if copies > 1 {
			t.Errorf("ORDERS.%d dead-lettered %d times", seq, copies)
		}
	}
	t.Logf("%d Terms of %d confirmed, each dead-lettered", len(confirmed), n)
}
