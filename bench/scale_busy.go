package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// The busy window's load: each busy consumer has scaleBusyRate messages a
// second published to it and one caller that Fetches (up to
// scaleBusyBatch, waiting up to scaleBusyExpires) and Acks what it got,
// through replica i mod R.
const (
	scaleBusyRate    = 50
	scaleBusyBatch   = 10
	scaleBusyExpires = time.Second
)

// busyLoops are the busy window's publisher and callers.
type busyLoops struct {
	names    []string
	consumed atomic.Int64
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	conns    []*grpc.ClientConn
	mu       sync.Mutex
	err      error // the first a loop met
}

// startBusy starts o.ScaleBusy consumers' loops.
func startBusy(ctx context.Context, nc *nats.Conn, reps []*scaleReplica, o Options) (*busyLoops, error) {
	ctx, cancel := context.WithCancel(ctx)
	b := &busyLoops{cancel: cancel}
	for _, r := range reps {
		c, err := grpc.NewClient(r.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, errors.Join(err, b.stop())
		}
		b.conns = append(b.conns, c)
	}
	for i := range min(o.ScaleBusy, o.Scale) {
		b.names = append(b.names, consumerName(i))
		cons := jetgatev1.NewConsumerServiceClient(b.conns[i%len(b.conns)])
		b.wg.Go(func() { b.loop(ctx, cons, o.Stream, consumerName(i)) })
	}
	b.wg.Go(func() { b.publish(ctx, nc, o.Subject) })
	return b, nil
}

// publish sends each busy consumer scaleBusyRate messages a second, in
// ten ticks.
func (b *busyLoops) publish(ctx context.Context, nc *nats.Conn, subject string) {
	const tick = 100 * time.Millisecond
	per := max(1, scaleBusyRate/10)
	t := time.NewTicker(tick)
	defer t.Stop()
	payload := make([]byte, 256)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, name := range b.names {
			for range per {
				if err := nc.Publish(subject+"."+name, payload); err != nil {
					b.fail(err)
					return
				}
			}
		}
	}
}

// loop Fetches and Acks consumer name until ctx ends.
func (b *busyLoops) loop(ctx context.Context, cons jetgatev1.ConsumerServiceClient, stream, name string) {
	for ctx.Err() == nil {
		resp, err := cons.Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: name, Batch: scaleBusyBatch,
			Expires: durationpb.New(scaleBusyExpires)})
		if err != nil {
			b.fail(err)
			return
		}
		if len(resp.GetMessages()) == 0 {
			continue
		}
		// The Ack is not canceled with the window: a caller's Acks finish.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		ack, err := cons.Ack(actx, &jetgatev1.AckRequest{Stream: stream, Consumer: name, Tokens: scaleTokens(resp.GetMessages())})
		cancel()
		if err != nil {
			b.fail(err)
			return
		}
		b.consumed.Add(int64(len(resp.GetMessages()) - len(ack.GetFailures())))
	}
}

func scaleTokens(ms []*jetgatev1.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.GetToken()
	}
	return out
}

// fail records a loop's error; one canceled with the window is none.
func (b *busyLoops) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil && !isCanceled(err) {
		b.err = err
	}
}

func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled
}

// stop ends the loops and returns the first error one met.
func (b *busyLoops) stop() error {
	b.cancel()
	b.wg.Wait()
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
