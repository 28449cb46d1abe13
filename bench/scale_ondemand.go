package bench

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// bindOnDemand asks every replica for every consumer once, one call after
// another: served on demand, a consumer is bound on its first call. It
// records what that cost (time, requests, each call's latency, the memory
// it took), then the latency of the same call through replica 1 once bound.
func bindOnDemand(ctx context.Context, counter *requestCounter, reps []*scaleReplica, o Options, rep *ScaleReport) error {
	for _, r := range reps {
		rep.RSSBeforeBind = append(rep.RSSBeforeBind, pidRSS(r.pid()))
	}
	before, start := counter.snapshot(), time.Now()
	var first []time.Duration
	for _, r := range reps {
		ds, err := getEvery(ctx, r, o)
		if err != nil {
			return err
		}
		first = append(first, ds...)
	}
	rep.BindAll = time.Since(start)
	rep.Bind = minus(counter.snapshot(), before)
	f := summarise(first)
	rep.FirstCall = &f
	again, err := getEvery(ctx, reps[0], o)
	if err != nil {
		return err
	}
	b := summarise(again)
	rep.BoundCall = &b
	return nil
}

// getEvery calls GetConsumer of every consumer through r, one after
// another, and returns each call's latency.
func getEvery(ctx context.Context, r *scaleReplica, o Options) ([]time.Duration, error) {
	conn, err := grpc.NewClient(r.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	cons := jetgatev1.NewConsumerServiceClient(conn)
	ds := make([]time.Duration, 0, o.Scale)
	for i := range o.Scale {
		start := time.Now()
		if _, err := cons.GetConsumer(ctx, &jetgatev1.GetConsumerRequest{Stream: o.Stream, Consumer: consumerName(i)}); err != nil {
			return nil, fmt.Errorf("GetConsumer of consumer %s: %w", consumerName(i), err)
		}
		ds = append(ds, time.Since(start))
	}
	return ds, nil
}

// perBound is each replica's memory per consumer it bound on demand: its
// RSS in the idle window less its RSS before the first calls, over the
// consumers; nil unless both were read.
func (rep ScaleReport) perBound() []float64 {
	if rep.Idle == nil || len(rep.RSSBeforeBind) != len(rep.Idle.Replicas) || rep.Consumers == 0 {
		return nil
	}
	out := make([]float64, len(rep.RSSBeforeBind))
	for i, b := range rep.RSSBeforeBind {
		out[i] = (rep.Idle.Replicas[i].RSS - b) / float64(rep.Consumers)
	}
	return out
}
