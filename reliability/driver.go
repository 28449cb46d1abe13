package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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
	// AnswerMsg, if set, decides in place of Answer, seeing the message.
	AnswerMsg func(r *rand.Rand, m *jetgatev1.Message) Action
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
	// Route, if set, returns the clients to call now, in place of
	// Publishers and Consumers: for deployments whose replicas come and go.
	// It is called for every RPC and must be safe for concurrent use.
	Route func() ([]jetgatev1.StreamServiceClient, []jetgatev1.ConsumerServiceClient)
	// Resend, if set, is asked after each answer whether the caller sends
	// it again, as one whose response was lost would, and after how long.
	// again is the action sent the second time: the same one for a retry
	// (all the tokens of the first), or another one for a stale settle,
	// sent only for the tokens the first settle confirmed, which must then
	// be refused (LEASE_SETTLED or LEASE_EXPIRED): a stale settle that
	// succeeds is reported in Stats.StaleAccepted. Either goes through
	// another replica than the last attempt of the first, when there is one.
	Resend func(r *rand.Rand, a Action) (again Action, after time.Duration, ok bool)
	// Watch, if set, sees every delivery handed to a caller, and every
	// settle just before each attempt to send it.
	Watch Watcher
	// Hold, if set, is how long a caller works on each batch it fetched
	// before it answers.
	Hold func(r *rand.Rand) time.Duration
	// Streaming, if set, makes Consume's workers callers of
	// ConsumerService.Consume in place of Fetch loops (consume.go).
	Streaming *StreamMode

	mu         sync.Mutex
	errors     map[codes.Code]int
	slowestErr time.Duration // the longest RPC that ended in an error
	lastAck    time.Time
	stall      time.Duration // the longest gap between two confirmed settles

	outcomes      map[string]int // per token: "<kind> <op> <result>"
	staleAccepted []string

	streams streamLog // the Consume streams of Streaming
}

// Watcher observes a Driver's traffic.
type Watcher interface {
	Delivered(m *jetgatev1.Message, at time.Time)
	Settling(a Action, ms []*jetgatev1.Message)
}

// SettleWatcher is a Watcher that also sees each settle jetgate confirmed.
type SettleWatcher interface {
	Watcher
	Settled(a Action, m *jetgatev1.Message)
}

// Stats are the driver's own observations.
type Stats struct {
	Errors       map[codes.Code]int
	SlowestError time.Duration
	LongestStall time.Duration
	// Outcomes counts settle outcomes per token, by kind (first, resend,
	// stale), op and result (OK or the failure reason); RPC failures are
	// in Errors.
	Outcomes map[string]int
	// StaleAccepted lists the stale settles (see Driver.Resend) that
	// succeeded.
	StaleAccepted []string
}

// Stats returns what the driver saw.
func (d *Driver) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	errs := make(map[codes.Code]int, len(d.errors))
	for k, v := range d.errors {
		errs[k] = v
	}
	outs := make(map[string]int, len(d.outcomes))
	for k, v := range d.outcomes {
		outs[k] = v
	}
	return Stats{Errors: errs, SlowestError: d.slowestErr, LongestStall: d.stall,
		Outcomes: outs, StaleAccepted: slices.Clone(d.staleAccepted)}
}

func (d *Driver) outcome(k settleKind, a Action, result string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.outcomes == nil {
		d.outcomes = make(map[string]int)
	}
	d.outcomes[k.String()+" "+a.String()+" "+result]++
}

func (d *Driver) stale(a Action, m *jetgatev1.Message) {
	md := m.GetMetadata()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.staleAccepted = append(d.staleAccepted, fmt.Sprintf("%s of %s (stream_seq %d, delivery %d)",
		a, m.GetData(), md.GetStreamSeq(), md.GetNumDelivered()))
}

func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case Nak:
		return "nak"
	case NakDelay:
		return "nak_delay"
	case Term:
		return "term"
	case NoAnswer:
		return "no_answer"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// settleKind is why a settle is sent: a caller's answer, the same answer
// again, or another answer after it.
type settleKind int

const (
	firstSettle settleKind = iota
	resendSettle
	staleSettle
)

func (k settleKind) String() string {
	return [...]string{"first", "resend", "stale"}[k]
}

// publishers and consumers are the clients to call now.
func (d *Driver) publishers() []jetgatev1.StreamServiceClient {
	if d.Route == nil {
		return d.Publishers
	}
	p, _ := d.Route()
	return p
}

func (d *Driver) consumers() []jetgatev1.ConsumerServiceClient {
	if d.Route == nil {
		return d.Consumers
	}
	_, c := d.Route()
	return c
}

// pick returns a random client of cs, other than avoid when there is
// another; nil when cs is empty.
func pick[C comparable](r *rand.Rand, cs []C, avoid C) C {
	var zero C
	if avoid != zero && len(cs) > 1 {
		others := make([]C, 0, len(cs))
		for _, c := range cs {
			if c != avoid {
				others = append(others, c)
			}
		}
		if len(others) > 0 {
			cs = others
		}
	}
	if len(cs) == 0 {
		return zero
	}
	return cs[r.IntN(len(cs))]
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
			p := pick(r, d.publishers(), nil)
			if p == nil {
				backoff(ctx, 50*time.Millisecond)
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, d.RPCTimeout)
			start := time.Now()
			_, err := p.Publish(pctx, &jetgatev1.PublishRequest{
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

// Consume runs workers Fetch+settle loops (or Consume streams, see
// Streaming) until publishing is over (published is closed) and every
// confirmed publish is acked or terminated, or ctx ends.
func (d *Driver) Consume(ctx context.Context, workers int, published <-chan struct{}) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg, resends sync.WaitGroup
	defer resends.Wait() // after the workers, the only ones to add to it
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			if d.Streaming != nil {
				d.streamWorker(ctx, r, &resends)
			} else {
				d.worker(ctx, r, &resends)
			}
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

func (d *Driver) worker(ctx context.Context, r *rand.Rand, resends *sync.WaitGroup) {
	for ctx.Err() == nil {
		msgs := d.fetch(ctx, r)
		groups := d.deliver(r, msgs)
		if d.Hold != nil && len(msgs) > 0 {
			backoff(ctx, d.Hold(r))
		}
		for a, ms := range groups {
			if a != NoAnswer {
				d.answer(ctx, r, a, ms, resends)
			}
		}
	}
}

// deliver records msgs as handed to a caller and groups them by the
// caller's answer.
func (d *Driver) deliver(r *rand.Rand, msgs []*jetgatev1.Message) map[Action][]*jetgatev1.Message {
	d.record(msgs)
	return d.decide(r, msgs)
}

// record notes msgs as handed to a caller, in the Checker and the Watch.
func (d *Driver) record(msgs []*jetgatev1.Message) {
	for _, m := range msgs {
		now := time.Now()
		d.Checker.Delivered(string(m.GetData()), now)
		if d.Watch != nil {
			d.Watch.Delivered(m, now)
		}
	}
}

// decide groups msgs by the caller's answer.
func (d *Driver) decide(r *rand.Rand, msgs []*jetgatev1.Message) map[Action][]*jetgatev1.Message {
	groups := make(map[Action][]*jetgatev1.Message)
	for _, m := range msgs {
		a := Ack
		if d.AnswerMsg != nil {
			a = d.AnswerMsg(r, m)
		} else if d.Answer != nil {
			a = d.Answer(r, m.GetMetadata().GetNumDelivered())
		}
		groups[a] = append(groups[a], m)
	}
	return groups
}

func (d *Driver) fetch(ctx context.Context, r *rand.Rand) []*jetgatev1.Message {
	fctx, cancel := context.WithTimeout(ctx, d.Expires+d.RPCTimeout)
	defer cancel()
	if d.CancelFetch != nil && d.CancelFetch(r) {
		t := time.AfterFunc(time.Duration(r.Int64N(int64(d.Expires))), cancel)
		defer t.Stop()
	}
	c := pick(r, d.consumers(), nil)
	if c == nil {
		backoff(ctx, 50*time.Millisecond)
		return nil
	}
	start := time.Now()
	resp, err := c.Fetch(fctx, &jetgatev1.FetchRequest{
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

func backoff(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
