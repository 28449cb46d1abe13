package reliability

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// waiter is what one long-polling caller got.
type waiter struct {
	replica int
	msgs    []*jetgatev1.Message
	empty   jetgatev1.EmptyReason
	err     error
	at      time.Time
}

// Many long-polling Fetch(1) callers spread over replicas of one consumer,
// more than its max_waiting (512), are all served once messages arrive: no
// MAX_WAITING, no error, one message each, none stranded. Replicas split
// the consumer's max_waiting between them (the roster in NATS), and a
// caller beyond its replica's share waits in line. A tenth of the callers
// leave before the messages come; what their pulls still receive goes to
// later Fetches, delivered at most twice.
func TestFaultManyWaitingCallersAcrossReplicas(t *testing.T) {
	for _, replicas := range []int{3, 10} {
		t.Run(fmt.Sprintf("%d replicas", replicas), func(t *testing.T) {
			waitingCallers(t, replicas, scale(1200, 5000))
		})
	}
}

func waitingCallers(t *testing.T, replicas, callers int) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	keys := token.RandomKeyring()
	gs := make([]*gwtest.Replica, replicas)
	for i := range gs {
		gs[i] = gwtest.Start(t, replica.Options{
			Conn: natstest.Connect(t, ns, reconnecting()...),
			Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer,
				AckWait: 30 * time.Second, MaxAckPending: 2 * callers}},
			Keys:   keys,
			Logger: testLogger(t),
		})
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	info := func() *jetstream.ConsumerInfo { return consumerInfo(t, nc) }
	maxWaiting := info().Config.MaxWaiting
	use := func() (sum replica.PullUse) {
		for _, g := range gs {
			u, err := g.Pulls(stream, consumer)
			if err != nil {
				t.Fatal(err)
			}
			sum.Open += u.Open
			sum.Allowed += u.Allowed
			sum.Queued += u.Queued
			sum.Replicas = min(cmpOr(sum.Replicas, u.Replicas), u.Replicas)
		}
		return sum
	}
	natstest.Eventually(t, 30*time.Second, "every replica sees the others and keeps to its share", func() bool {
		u := use()
		return u.Replicas == replicas && u.Allowed < maxWaiting
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := make([]waiter, callers)
	leave := make([]context.CancelFunc, callers)
	var wg, left sync.WaitGroup
	for i := range callers {
		got[i].replica = i % replicas
		cctx, cancel := context.WithCancel(ctx)
		leave[i] = cancel
		gone := i%10 == 9 // every tenth caller leaves before messages come
		if gone {
			left.Add(1)
		}
		wg.Go(func() {
			defer cancel()
			res, err := gs[got[i].replica].Consumers.Fetch(cctx, &jetgatev1.FetchRequest{
				Stream: stream, Consumer: consumer, Batch: 1, Expires: durationpb.New(90 * time.Second)})
			got[i].err, got[i].at = err, time.Now()
			if err == nil {
				got[i].msgs, got[i].empty = res.GetMessages(), res.GetEmptyReason()
			}
			if gone {
				left.Done()
			}
		})
	}
	mostWaiting := 0
	natstest.Eventually(t, time.Minute, "every caller waiting", func() bool {
		u := use()
		mostWaiting = max(mostWaiting, info().NumWaiting)
		return u.Open+u.Queued == callers
	})
	u := use()
	t.Logf("%d callers waiting over %d replicas: %d pulls open (%d allowed), %d in line; the server has %d of max_waiting %d",
		callers, replicas, u.Open, u.Allowed, u.Queued, mostWaiting, maxWaiting)
	if mostWaiting >= maxWaiting {
		t.Fatalf("the server had %d pulls waiting, max_waiting %d: replicas did not keep to their shares", mostWaiting, maxWaiting)
	}
	for i := 9; i < callers; i += 10 {
		leave[i]()
	}
	left.Wait()

	published := time.Now()
	publishAll(ctx, t, js, callers)
	wg.Wait()

	var tooMany, failed, empty int
	var took []time.Duration
	seen := make(map[uint64]bool)
	tokens := make([][]string, replicas)
	for i, w := range got {
		switch {
		case i%10 == 9:
			if w.err == nil {
				t.Fatalf("caller %d left, yet its Fetch returned %d messages", i, len(w.msgs))
			}
		case w.err != nil:
			failed++
			t.Logf("a caller of replica %d: %v", w.replica, w.err)
		case w.empty == jetgatev1.EmptyReason_EMPTY_REASON_MAX_WAITING:
			tooMany++
		case len(w.msgs) != 1:
			empty++
		default:
			m := w.msgs[0]
			seq := m.GetMetadata().GetStreamSeq()
			if seen[seq] {
				t.Fatalf("stream sequence %d handed to two callers", seq)
			}
			seen[seq] = true
			took = append(took, w.at.Sub(published))
			tokens[w.replica] = append(tokens[w.replica], m.GetToken())
		}
	}
	slices.Sort(took)
	if len(took) > 0 {
		t.Logf("served %d of %d: publish to receipt p50 %v, p99 %v, max %v", len(took), callers,
			took[len(took)/2].Round(time.Millisecond), took[len(took)*99/100].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	}
	if tooMany+failed+empty > 0 {
		t.Fatalf("of %d callers that stayed: %d told MAX_WAITING, %d failed, %d got no message", len(took)+tooMany+failed+empty, tooMany, failed, empty)
	}

	// What the callers that left would have had comes to the next Fetches,
	// delivered at most twice: never nak'ed into a pull still open.
	for len(seen) < callers && ctx.Err() == nil {
		for i, g := range gs {
			res, err := g.Consumers.Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 100, Expires: durationpb.New(200 * time.Millisecond)})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.GetMessages() {
				if md := m.GetMetadata(); md.GetNumDelivered() > 2 {
					t.Fatalf("stream sequence %d delivered %d times", md.GetStreamSeq(), md.GetNumDelivered())
				}
				seen[m.GetMetadata().GetStreamSeq()] = true
				tokens[i] = append(tokens[i], m.GetToken())
			}
		}
	}

	for i, ts := range tokens {
		for batch := range slices.Chunk(ts, settle.MaxTokens) {
			res, err := gs[i].Consumers.Ack(ctx, &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: batch})
			if err != nil {
				t.Fatal(err)
			}
			if f := res.GetFailures(); len(f) > 0 {
				t.Fatalf("ack: %d failed, the first %v", len(f), f[0])
			}
		}
	}
	natstest.Eventually(t, 30*time.Second, "nothing stranded", func() bool {
		ci := info()
		return ci.NumPending == 0 && ci.NumAckPending == 0 && ci.AckFloor.Stream == uint64(callers)
	})
}

// publishAll publishes n messages straight to NATS, a thousand at a time
// (nats.go stalls past 4,000 acks outstanding), waiting for each ack.
func publishAll(ctx context.Context, t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	for start := 0; start < n; start += 1000 {
		var futures []jetstream.PubAckFuture
		for i := start; i < min(start+1000, n); i++ {
			f, err := js.PublishAsync(fmt.Sprintf("orders.waiting.%d", i), []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				t.Fatal(err)
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
	}
}

func cmpOr(a, b int) int {
	if a == 0 {
		return b
	}
	return a
}
