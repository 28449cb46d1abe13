package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/app"
)

// RunSoak starts the shape o asks for (o.SoakReplicas jetgate processes
// when deployed), publishes at o.Rate messages a second for o.Soak and
// consumes them, with the bench's own workers or o.SoakLibraries'
// subscribers, sampling each replica's /metrics every o.Every.
func RunSoak(ctx context.Context, o Options) (SoakResult, error) {
	n := max(1, o.SoakReplicas)
	if n > 1 && (o.GRPCAddr != "" || o.InProcess) {
		return SoakResult{}, errors.New("a soak over more than one replica starts them itself: not with --grpc-addr or --in-process")
	}
	libs, err := findLibraries(o.SoakLibraries)
	if err != nil {
		return SoakResult{}, err
	}
	switch {
	case o.GRPCAddr != "":
		return soak(ctx, []app.Addrs{{GRPC: o.GRPCAddr, HTTP: o.HTTPAddr, NATS: o.NATSURL}}, libs, o)
	case o.InProcess:
		stop, addrs, err := startJetgate(ctx, o)
		if err != nil {
			return SoakResult{}, err
		}
		defer stop()
		return soak(ctx, []app.Addrs{addrs}, libs, o)
	}
	d, err := startDeployed(ctx, o, n)
	if err != nil {
		return SoakResult{}, err
	}
	defer d.stop()
	return soak(ctx, d.addrs(), libs, o)
}

// soakRun is one soak under way.
type soakRun struct {
	o         Options
	reps      []app.Addrs // the replicas; each one's NATS is the server's URL
	hc        *http.Client
	errs      chan error // what ends the soak early; each sender sends at most once
	published atomic.Int64
	handled   func() int64 // messages consumed so far, by whatever consumes
	start     time.Time
	last      []mark // each replica's latest sample, or the start
	res       SoakResult
}

// mark is where a replica's latest sample left the counts.
type mark struct {
	at      time.Time
	handled int64
	mallocs float64
}

// soak publishes at o.Rate messages a second through the replicas in turn
// and consumes them for o.Soak: with o.Workers Fetch+Ack loops (worker w
// through replica w mod len(reps)) or, given libs, with one subscriber
// process per library. Every o.Every it samples each replica's /metrics.
func soak(ctx context.Context, reps []app.Addrs, libs []library, o Options) (SoakResult, error) {
	conns := make([]*grpc.ClientConn, len(reps))
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i, rep := range reps {
		var err error
		if conns[i], err = grpc.NewClient(rep.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
			return SoakResult{}, err
		}
	}
	r := &soakRun{o: o, reps: reps, errs: make(chan error, o.Workers+len(libs)+1),
		hc:   &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()},
		last: make([]mark, len(reps)), res: SoakResult{Replicas: make([]ReplicaSoak, len(reps))}}
	defer r.hc.CloseIdleConnections()
	var subs subscribers
	if len(libs) > 0 {
		var err error
		if subs, err = startSubscribers(libs, reps, o, r.errs); err != nil {
			return SoakResult{}, err
		}
		r.handled = subs.handled
	}
	runCtx, cancel := context.WithTimeout(ctx, o.Soak)
	defer cancel()
	var wg sync.WaitGroup
	if len(libs) == 0 {
		r.handled = r.startWorkers(runCtx, &wg, conns)
	}
	r.start = time.Now()
	for i := range r.last {
		r.last[i].at = r.start
	}
	wg.Go(func() { r.publish(runCtx, conns) })
	err := r.sample(runCtx)
	cancel()
	wg.Wait()
	if subs != nil {
		err = errors.Join(err, subs.stop())
		r.res.Subscribers = subs.results()
	}
	r.res.Published, r.res.Acked = r.published.Load(), r.handled()
	r.res.Pending, r.res.AckPending = -1, -1
	if url := reps[0].NATS; url != "" {
		var berr error
		if r.res.Pending, r.res.AckPending, berr = consumerBacklog(ctx, url, o); berr != nil {
			err = errors.Join(err, berr)
		}
	}
	for i := range r.res.Replicas {
		r.res.Replicas[i].judge()
	}
	r.print()
	return r.res, err
}

// startWorkers starts the bench's own Fetch+Ack loops, worker w through
// replica w mod len(conns), until ctx ends; it returns their count of
// messages acked.
func (r *soakRun) startWorkers(ctx context.Context, wg *sync.WaitGroup, conns []*grpc.ClientConn) func() int64 {
	acked := new(atomic.Int64)
	for w := range r.o.Workers {
		c := grpcClient{jetgatev1.NewConsumerServiceClient(conns[w%len(conns)]), r.o}
		wg.Go(func() {
			for ctx.Err() == nil {
				toks, err := c.fetch(ctx)
				if err == nil && len(toks) > 0 {
					err = c.ack(ctx, toks)
				}
				if err != nil {
					if !ending(ctx, err) {
						r.errs <- err
					}
					return
				}
				acked.Add(int64(len(toks)))
			}
		})
	}
	return acked.Load
}

// publish publishes at o.Rate messages a second, through each replica in
// turn, until ctx ends.
func (r *soakRun) publish(ctx context.Context, conns []*grpc.ClientConn) {
	strms := make([]jetgatev1.StreamServiceClient, len(conns))
	for i, c := range conns {
		strms[i] = jetgatev1.NewStreamServiceClient(c)
	}
	data := bytes.Repeat([]byte("x"), r.o.Size)
	next := 0
	err := paced(ctx, r.o.Rate, func() error {
		strm := strms[next%len(strms)]
		next++
		_, err := strm.Publish(ctx, &jetgatev1.PublishRequest{Stream: r.o.Stream, Subject: r.o.Subject, Data: data})
		if err == nil {
			r.published.Add(1)
		}
		if ending(ctx, err) {
			return nil
		}
		return err
	})
	if err != nil {
		r.errs <- fmt.Errorf("publish: %w", err)
	}
}

// sample reads every replica's /metrics every o.Every until ctx ends, or
// returns the first error that ends the soak early.
func (r *soakRun) sample(ctx context.Context) error {
	tick := time.NewTicker(r.o.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-r.errs:
			return err
		case <-tick.C:
			handled := r.handled()
			for i := range r.reps {
				// A scrape begun as the soak ends is still read.
				r.sampleReplica(context.WithoutCancel(ctx), i, handled)
			}
		}
	}
}

// sampleReplica reads replica i's /metrics and prints its line.
func (r *soakRun) sampleReplica(ctx context.Context, i int, handled int64) {
	now := time.Now()
	at := now.Sub(r.start).Round(time.Second)
	s, err := scrape(ctx, r.hc, "http://"+r.reps[i].HTTP+"/metrics")
	if err != nil {
		fmt.Fprintf(r.o.Out, "soak %6v%s: %v\n", at, r.label(i), err)
		return
	}
	prev := r.last[i]
	s.At, s.Acked = at, handled-prev.handled
	if s.Acked > 0 && prev.mallocs > 0 {
		s.AllocsPerMsg = (s.Mallocs - prev.mallocs) / float64(s.Acked)
	}
	r.last[i] = mark{at: now, handled: handled, mallocs: s.Mallocs}
	r.res.Replicas[i].Samples = append(r.res.Replicas[i].Samples, s)
	fmt.Fprintf(r.o.Out, "soak %6v%s acked/s %7.0f goroutines %5.0f heap %6.1f MiB rss %6.1f MiB leases %5.0f allocs/msg %6.1f\n",
		s.At, r.label(i), float64(s.Acked)/now.Sub(prev.at).Seconds(), s.Goroutines, s.HeapBytes/(1<<20), s.RSSBytes/(1<<20), s.Leases, s.AllocsPerMsg)
}

// label names replica i in the soak's lines; with one replica, nothing.
func (r *soakRun) label(i int) string {
	if len(r.reps) == 1 {
		return ""
	}
	return fmt.Sprintf(" replica %d", i+1)
}

// print writes the soak's totals, each replica's verdict and each
// subscriber's final word.
func (r *soakRun) print() {
	res, o := r.res, r.o
	through := ""
	if len(r.reps) > 1 {
		through = fmt.Sprintf(" through %d replicas", len(r.reps))
	}
	by := fmt.Sprintf("%d Fetch+Ack workers", o.Workers)
	if len(res.Subscribers) > 0 {
		by = strings.Join(o.SoakLibraries, ", ") + " subscribers"
	}
	backlog := "backlog unknown (no NATS URL)"
	if res.Pending >= 0 {
		backlog = fmt.Sprintf("backlog %d (pending %d, ack pending %d)", res.Pending+res.AckPending, res.Pending, res.AckPending)
	}
	fmt.Fprintf(o.Out, "soak %v at %d msg/s%s, consumed by %s: published %d, acked %d, %s\n",
		o.Soak, o.Rate, through, by, res.Published, res.Acked, backlog)
	for i, rs := range res.Replicas {
		fmt.Fprintf(o.Out, "soak%s: %d samples; goroutines %v, heap %v, rss %v, leases %v, allocs/msg %v\n",
			r.label(i), len(rs.Samples), rs.Goroutines, rs.Heap, rs.RSS, rs.Leases, rs.Allocs)
	}
	for _, s := range res.Subscribers {
		fmt.Fprintf(o.Out, "soak %s subscriber, replica %d: handled %d, failed %d; %s\n", s.Library, s.Replica+1, s.Handled, s.Failed, s.Final)
	}
}

// consumerBacklog reads the consumer's pending and ack-pending counts from
// the NATS server at url.
func consumerBacklog(ctx context.Context, url string, o Options) (pending, ackPending int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := nats.Connect(url, nats.Name("jetgate-bench"))
	if err != nil {
		return -1, -1, fmt.Errorf("backlog: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return -1, -1, err
	}
	c, err := js.Consumer(ctx, o.Stream, o.Consumer)
	if err != nil {
		return -1, -1, fmt.Errorf("backlog of %s/%s: %w", o.Stream, o.Consumer, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return -1, -1, fmt.Errorf("backlog of %s/%s: %w", o.Stream, o.Consumer, err)
	}
	return int64(info.NumPending), int64(info.NumAckPending), nil
}

// ending reports whether err is only the soak's end: its context is done,
// or the server, which gets the same deadline, saw it pass a moment first.
func ending(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && status.Code(err) == codes.DeadlineExceeded && time.Until(dl) < time.Second
}

// paced calls f rate times a second until ctx ends.
func paced(ctx context.Context, rate int, f func() error) error {
	const tick = 10 * time.Millisecond
	perTick := float64(rate) * tick.Seconds()
	t := time.NewTicker(tick)
	defer t.Stop()
	var owed float64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for owed += perTick; owed >= 1; owed-- {
			if err := f(); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}
