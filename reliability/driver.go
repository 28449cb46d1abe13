package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// Action is how a simulated client answers a delivery.
type Action int

// The answers a client can give.
const (
	Ack Action = iota
	Nak
	NakDelay
	Term
	NoAnswer
)

// Driver publishes and consumes through jetgate over gRPC as users do, and
// records every outcome in its Checker.
type Driver struct {
	Stream, Consumer string
	Publishers       []jetgatev1.StreamServiceClient
	Consumers        []jetgatev1.ConsumerServiceClient // settles go to a random one
	Checker          *Checker
	// Answer decides each delivery's fate; nil acks everything.
	Answer func(r *rand.Rand, delivered uint64) Action
	// CancelFetch, if set, is asked before each Fetch whether to cancel it
	// after a random moment, as a caller that goes away would.
	CancelFetch func(r *rand.Rand) bool
	Batch       int
	Expires     time.Duration
	RPCTimeout  time.Duration
	// PublishGap paces publishing; zero publishes as fast as confirmed.
	PublishGap time.Duration
	// Quiesce is how long consuming goes on once everything looks settled
	// while some settles are of unknown outcome: long enough (ack_wait and
	// more) for the messages whose settle did not take to come back.
	Quiesce time.Duration

	mu         sync.Mutex
	errors     map[codes.Code]int
	slowestErr time.Duration // the longest RPC that ended in an error
	lastAck    time.Time
	stall      time.Duration // the longest gap between two confirmed settles
}

// Stats are the driver's own observations.
type Stats struct {
	Errors       map[codes.Code]int
	SlowestError time.Duration
	LongestStall time.Duration
}

// Stats returns what the driver saw.
func (d *Driver) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	errs := make(map[codes.Code]int, len(d.errors))
	for k, v := range d.errors {
		errs[k] = v
	}
	return Stats{Errors: errs, SlowestError: d.slowestErr, LongestStall: d.stall}
}

func (d *Driver) rpcErr(err error, took time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.errors == nil {
		d.errors = make(map[codes.Code]int)
	}
	d.errors[status.Code(err)]++
	d.slowestErr = max(d.slowestErr, took)
}

func (d *Driver) settledNow() {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if !d.lastAck.IsZero() {
		d.stall = max(d.stall, now.Sub(d.lastAck))
	}
	d.lastAck = now
}

// Publish stores n messages with ids prefix-0 … prefix-(n-1), retrying each
// until the stream confirms it; msg_id makes the retries safe.
func (d *Driver) Publish(ctx context.Context, prefix string, n int) error {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	for i := 0; i < n; i++ {
		id := prefix + "-" + strconv.Itoa(i)
		d.Checker.Attempt(id)
		for {
			if ctx.Err() != nil {
				return fmt.Errorf("publish %s: %w", id, ctx.Err())
			}
			pctx, cancel := context.WithTimeout(ctx, d.RPCTimeout)
			start := time.Now()
			_, err := d.Publishers[r.IntN(len(d.Publishers))].Publish(pctx, &jetgatev1.PublishRequest{
				Stream: d.Stream, Subject: "orders.faults", Data: []byte(id), MsgId: id,
			})
			cancel()
			if err == nil {
				d.Checker.Published(id, time.Now())
				if d.PublishGap > 0 {
					backoff(ctx, d.PublishGap)
				}
				break
			}
			d.rpcErr(err, time.Since(start))
			backoff(ctx, 50*time.Millisecond)
		}
	}
	return nil
}

// Consume runs workers Fetch+settle loops until publishing is over
// (published is closed) and every confirmed publish is acked or terminated,
// or ctx ends.
func (d *Driver) Consume(ctx context.Context, workers int, published <-chan struct{}) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.worker(ctx, rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano()))))
		}()
	}
	var quietUntil time.Time
	for {
		select {
		case <-published:
			if !d.Checker.Done() {
				break
			}
			if d.Checker.Ambiguous() > 0 && d.Quiesce > 0 && quietUntil.IsZero() {
				quietUntil = time.Now().Add(d.Quiesce)
			}
			if time.Now().After(quietUntil) {
				cancel()
				wg.Wait()
				return nil
			}
		default:
		}
		select {
		case <-ctx.Done():
			cancel()
			wg.Wait()
			return fmt.Errorf("consume: %w; %v", ctx.Err(), d.Checker.Report())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *Driver) worker(ctx context.Context, r *rand.Rand) {
	for ctx.Err() == nil {
		msgs := d.fetch(ctx, r)
		groups := make(map[Action][]*jetgatev1.Message)
		for _, m := range msgs {
			d.Checker.Delivered(string(m.GetData()), time.Now())
			a := Ack
			if d.Answer != nil {
				a = d.Answer(r, m.GetMetadata().GetNumDelivered())
			}
			groups[a] = append(groups[a], m)
		}
		for a, ms := range groups {
			if a != NoAnswer {
				d.settle(ctx, r, a, ms)
			}
		}
	}
}

func (d *Driver) fetch(ctx context.Context, r *rand.Rand) []*jetgatev1.Message {
	fctx, cancel := context.WithTimeout(ctx, d.Expires+d.RPCTimeout)
	defer cancel()
	if d.CancelFetch != nil && d.CancelFetch(r) {
		t := time.AfterFunc(time.Duration(r.Int64N(int64(d.Expires))), cancel)
		defer t.Stop()
	}
	start := time.Now()
	resp, err := d.Consumers[r.IntN(len(d.Consumers))].Fetch(fctx, &jetgatev1.FetchRequest{
		Stream: d.Stream, Consumer: d.Consumer, Batch: int32(d.Batch), Expires: durationpb.New(d.Expires),
	})
	if err != nil {
		if ctx.Err() == nil && status.Code(err) != codes.Canceled {
			d.rpcErr(err, time.Since(start))
			backoff(ctx, 50*time.Millisecond)
		}
		return nil
	}
	return resp.GetMessages()
}

// settle answers ms with a, retrying what failed for a retryable reason
// until it succeeds or the lease expires.
func (d *Driver) settle(ctx context.Context, r *rand.Rand, a Action, ms []*jetgatev1.Message) {
	pending := ms
	for len(pending) > 0 && ctx.Err() == nil {
		tokens := make([]string, len(pending))
		for i, m := range pending {
			tokens[i] = m.GetToken()
		}
		c := d.Consumers[r.IntN(len(d.Consumers))]
		sctx, cancel := context.WithTimeout(ctx, d.RPCTimeout)
		start := time.Now()
		fails, err := call(sctx, c, d.Stream, d.Consumer, a, tokens)
		cancel()
		if err != nil {
			d.rpcErr(err, time.Since(start))
			d.maybe(a, pending)
			backoff(ctx, 50*time.Millisecond)
			continue
		}
		failed := make(map[int32]string, len(fails))
		for _, f := range fails {
			failed[f.GetIndex()] = f.GetReason()
		}
		var retry []*jetgatev1.Message
		for i, m := range pending {
			reason, bad := failed[int32(i)]
			switch {
			case !bad:
				d.settledNow()
				id := string(m.GetData())
				switch a {
				case Ack:
					d.Checker.Acked(id)
				case Term:
					d.Checker.Termed(id)
				}
			case reason == "NATS_UNAVAILABLE" || reason == "SETTLE_IN_PROGRESS":
				d.maybe(a, []*jetgatev1.Message{m})
				retry = append(retry, m)
			}
		}
		pending = retry
		if len(pending) > 0 {
			backoff(ctx, 50*time.Millisecond)
		}
	}
}

// maybe notes acks and terms that may have been applied.
func (d *Driver) maybe(a Action, ms []*jetgatev1.Message) {
	if a != Ack && a != Term {
		return
	}
	for _, m := range ms {
		d.Checker.MaybeSettled(string(m.GetData()))
	}
}

func call(ctx context.Context, c jetgatev1.ConsumerServiceClient, stream, consumer string, a Action, tokens []string) ([]*jetgatev1.TokenFailure, error) {
	switch a {
	case Ack:
		resp, err := c.Ack(ctx, &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: tokens})
		return resp.GetFailures(), err
	case Nak, NakDelay:
		req := &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: tokens}
		if a == NakDelay {
			req.Delay = durationpb.New(200 * time.Millisecond)
		}
		resp, err := c.Nak(ctx, req)
		return resp.GetFailures(), err
	default:
		resp, err := c.Term(ctx, &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: tokens, Reason: "fault suite"})
		return resp.GetFailures(), err
	}
}

func backoff(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
