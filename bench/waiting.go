package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/embedded"
)

// The waiting measurement's settings. Every caller asks for waitExpires, the
// gateway's default --max-expires, and gives up waitSlack after it: a caller
// not served by then was stranded, not slow.
const (
	waitExpires   = 30 * time.Second
	waitSlack     = 15 * time.Second
	waitAckWait   = 30 * time.Second
	waitPoll      = 50 * time.Millisecond
	waitCondLimit = 60 * time.Second // for the roster, the callers' places, the consumer to drain
	// callersPerConn keeps well below the gateway's 1024 concurrent streams
	// a connection.
	callersPerConn = 500
	ackBatch       = 1000
)

// WaitingResult is one round of the waiting measurement: o.Waiting Fetch(1)
// callers long-polling, spread evenly over Replicas processes, then served
// by as many messages published at once.
type WaitingResult struct {
	Replicas int `json:"replicas"`
	Callers  int `json:"callers"`
	// Served got exactly one message; ServedPerReplica by the replica asked.
	Served           int    `json:"served"`
	ServedPerReplica []int  `json:"served_per_replica"`
	MaxWaiting       int    `json:"max_waiting_empties"`
	OtherEmpty       int    `json:"other_empties"`
	Errors           int    `json:"errors"`
	FirstError       string `json:"first_error,omitempty"`
	// AllServed is from the start of publishing to the last caller's
	// return; Latency the same for each caller.
	AllServed time.Duration `json:"all_served_ns"`
	Latency   Latency       `json:"latency"`
	// With every caller waiting: the pulls the replicas had open and the
	// Fetches in their lines, what the server counted waiting and allows.
	PullsOpen          int `json:"pulls_open"`
	PullsAllowed       int `json:"pulls_allowed"`
	FetchesQueued      int `json:"fetches_queued"`
	ServerWaiting      int `json:"server_num_waiting"`
	ConsumerMaxWaiting int `json:"consumer_max_waiting"`
	// What every replica together had in use more, per waiting Fetch: heap
	// and stacks after a collection, goroutines, resident memory.
	BytesPerWaiting      float64 `json:"bytes_per_waiting_fetch"`
	GoroutinesPerWaiting float64 `json:"goroutines_per_waiting_fetch"`
	RSSPerWaiting        float64 `json:"rss_bytes_per_waiting_fetch"`
	// After every token was acked: acks refused, and what the consumer
	// still had pending, unacknowledged or redelivered.
	AckFailures int    `json:"ack_failures"`
	Stranded    uint64 `json:"stranded"`
	Redelivered uint64 `json:"redelivered"`
}

// ok reports whether every caller was served and nothing was stranded.
func (r WaitingResult) ok() bool {
	return r.Served == r.Callers && r.MaxWaiting == 0 && r.Errors == 0 && r.AckFailures == 0 &&
		r.Stranded == 0 && r.Redelivered == 0 && r.ServerWaiting <= r.ConsumerMaxWaiting
}

// RunWaiting measures o.Waiting long-polling Fetch(1) callers over each of
// o.Replicas replicas in turn, prints the table and, with o.JSON, writes it.
// It fails if any caller was not served or any message is left stranded.
func RunWaiting(ctx context.Context, o Options) ([]WaitingResult, error) {
	if o.Waiting <= 0 || len(o.Replicas) == 0 {
		return nil, errors.New("the waiting measurement needs callers and replica counts")
	}
	rep := WaitingReport{Machine: thisMachine()}
	fmt.Fprintf(o.Out, "jetgate-bench: %d long-polling Fetch(1) callers (expires %v) over %v replicas, each a process of its own\n",
		o.Waiting, waitExpires, o.Replicas)
	var failed error
	for _, n := range o.Replicas {
		r, err := measureWaiting(ctx, o, n)
		if err != nil {
			return rep.Results, fmt.Errorf("%d replicas: %w", n, err)
		}
		fmt.Fprintln(o.Out, r.progress())
		rep.Results = append(rep.Results, r)
		if !r.ok() && failed == nil {
			failed = fmt.Errorf("%d replicas: not every caller was served, or a message was stranded (first error: %q)", n, r.FirstError)
		}
	}
	fmt.Fprintln(o.Out)
	rep.print(o.Out)
	if o.JSON != "" {
		if err := writeJSON(o.JSON, rep); err != nil {
			return rep.Results, err
		}
	}
	return rep.Results, failed
}

// caller is one Fetch(1) and what came of it.
type caller struct {
	replica int
	token   string
	resp    *jetgatev1.FetchResponse
	err     error
	done    time.Time
}

// measureWaiting is one round: a NATS server of its own, n replica
// processes, the callers, the messages, the acks.
func measureWaiting(ctx context.Context, o Options, n int) (WaitingResult, error) {
	res := WaitingResult{Replicas: n, Callers: o.Waiting, ServedPerReplica: make([]int, n)}
	dir, err := os.MkdirTemp("", "jetgate-bench-waiting-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	ns, err := embedded.Start(embedded.Options{Host: "127.0.0.1", Port: -1, StoreDir: dir})
	if err != nil {
		return res, err
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	nc, err := nats.Connect(ns.ClientURL(), nats.Name("jetgate-bench"))
	if err != nil {
		return res, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return res, err
	}
	// The bench creates the stream so that the replicas, starting, find it;
	// they bind the consumer, with room for every caller's message unacked.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: o.Stream, Subjects: []string{o.Subject}}); err != nil {
		return res, err
	}
	cfg := replicaConfig{NATSURL: ns.ClientURL(), Stream: o.Stream, Consumer: o.Consumer, Subject: o.Subject,
		MaxAckPending: 2 * o.Waiting, AckWait: waitAckWait}
	reps, err := startReplicas(ctx, o, cfg, n)
	defer func() {
		for _, r := range reps {
			_ = r.stop()
		}
	}()
	if err != nil {
		return res, err
	}

	conns, err := dialReplicas(ctx, reps, o.Waiting)
	defer func() {
		for _, cs := range conns {
			for _, c := range cs {
				c.Close()
			}
		}
	}()
	if err != nil {
		return res, err
	}
	before, err := settledMetrics(ctx, reps, o)
	if err != nil {
		return res, err
	}

	callers := make([]caller, o.Waiting)
	var wg sync.WaitGroup
	var returned atomic.Int64 // callers back before any message
	// However this round ends, the callers are stopped and waited for.
	callCtx, stopCallers := context.WithCancel(ctx)
	defer wg.Wait()
	defer stopCallers()
	for i := range callers {
		c := &callers[i]
		c.replica = i % n
		cs := conns[c.replica]
		cons := jetgatev1.NewConsumerServiceClient(cs[(i/n)%len(cs)])
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(callCtx, waitExpires+waitSlack)
			defer cancel()
			c.resp, c.err = cons.Fetch(cctx, &jetgatev1.FetchRequest{Stream: o.Stream, Consumer: o.Consumer,
				Batch: 1, Expires: durationpb.New(waitExpires)})
			c.done = time.Now()
			returned.Add(1)
		})
	}
	// Every caller holds a pull or waits in line for one, or has returned
	// already (refused: the tally counts it).
	var waiting []replicaMetrics
	err = poll(ctx, "every caller to wait (pulls open + fetches queued = callers)", func() (bool, error) {
		ms, err := readMetrics(ctx, reps, o)
		waiting = ms
		sum := returned.Load()
		for _, m := range ms {
			sum += int64(m.Open + m.Queued)
		}
		return err == nil && sum >= int64(o.Waiting), err
	})
	if err != nil {
		return res, err
	}
	for _, m := range waiting {
		res.PullsOpen += int(m.Open)
		res.PullsAllowed += int(m.Allowed)
		res.FetchesQueued += int(m.Queued)
	}
	ci, err := consumerInfo(ctx, js, o)
	if err != nil {
		return res, err
	}
	res.ServerWaiting, res.ConsumerMaxWaiting = ci.NumWaiting, ci.Config.MaxWaiting
	after, err := settledMetrics(ctx, reps, o)
	if err != nil {
		return res, err
	}
	per := func(f func(replicaMetrics) float64) float64 {
		var d float64
		for i := range after {
			d += f(after[i]) - f(before[i])
		}
		return d / float64(o.Waiting)
	}
	res.BytesPerWaiting = per(replicaMetrics.inUse)
	res.GoroutinesPerWaiting = per(func(m replicaMetrics) float64 { return m.Goroutines })
	res.RSSPerWaiting = per(func(m replicaMetrics) float64 { return m.RSS })

	pub, err := newNATSPublisher(nc, o)
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := pub.publish(ctx, o.Subject, o.Waiting); err != nil {
		return res, err
	}
	wg.Wait()
	res.tally(callers, start)
	res.AckFailures = ackAll(ctx, conns, callers, o)
	if err := drained(ctx, js, o, &res); err != nil {
		return res, err
	}
	return res, nil
}

// tally counts what the callers got, and how long after start they got it.
func (r *WaitingResult) tally(callers []caller, start time.Time) {
	ds := make([]time.Duration, 0, len(callers))
	for i := range callers {
		c := &callers[i]
		ds = append(ds, max(c.done.Sub(start), 0)) // 0: back before any message
		switch msgs := c.resp.GetMessages(); {
		case c.err != nil:
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = c.err.Error()
			}
		case len(msgs) == 1:
			r.Served++
			r.ServedPerReplica[c.replica]++
			c.token = msgs[0].GetToken()
		case c.resp.GetEmptyReason() == jetgatev1.EmptyReason_EMPTY_REASON_MAX_WAITING:
			r.MaxWaiting++
		default:
			r.OtherEmpty++
		}
	}
	r.Latency = summarise(ds)
	r.AllServed = r.Latency.Max
}

// ackAll acks every token through the replica that issued it, in batches,
// and returns how many were refused (a failed call refuses its batch).
func ackAll(ctx context.Context, conns [][]*grpc.ClientConn, callers []caller, o Options) int {
	byReplica := make([][]string, len(conns))
	for _, c := range callers {
		if c.token != "" {
			byReplica[c.replica] = append(byReplica[c.replica], c.token)
		}
	}
	failed := 0
	for i, toks := range byReplica {
		cons := jetgatev1.NewConsumerServiceClient(conns[i][0])
		for len(toks) > 0 {
			b := toks[:min(ackBatch, len(toks))]
			toks = toks[len(b):]
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			resp, err := cons.Ack(actx, &jetgatev1.AckRequest{Stream: o.Stream, Consumer: o.Consumer, Tokens: b})
			cancel()
			if err != nil {
				failed += len(b)
				continue
			}
			failed += len(resp.GetFailures())
		}
	}
	return failed
}

// drained waits until the consumer has nothing pending or unacknowledged,
// then records what is left: a message stranded in a pull nobody waits on
// would show as unacknowledged, and come back redelivered.
func drained(ctx context.Context, js jetstream.JetStream, o Options, r *WaitingResult) error {
	var ci *jetstream.ConsumerInfo
	err := poll(ctx, "the consumer to drain", func() (bool, error) {
		var err error
		ci, err = consumerInfo(ctx, js, o)
		return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0, err
	})
	if ci == nil {
		return err
	}
	r.Stranded, r.Redelivered = ci.NumPending+uint64(ci.NumAckPending), uint64(ci.NumRedelivered)
	return nil // a consumer that did not drain is a result, not a failure to measure
}

func consumerInfo(ctx context.Context, js jetstream.JetStream, o Options) (*jetstream.ConsumerInfo, error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := js.Consumer(ictx, o.Stream, o.Consumer)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", o.Consumer, err)
	}
	return c.CachedInfo(), nil
}

// poll checks cond every waitPoll until it holds, up to waitCondLimit. An
// error from cond is kept as the reason, should the limit pass.
func poll(ctx context.Context, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, waitCondLimit)
	defer cancel()
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("waiting for %s: %w", what, ctx.Err()), last)
		case <-t.C:
		}
	}
}
