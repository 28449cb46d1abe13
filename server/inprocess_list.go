package server

import (
	"context"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// The listings in process, through the chain (inprocess.go).

func (x *chainedStream) ListStreams(ctx context.Context, r *jetgatev1.ListStreamsRequest) (*jetgatev1.ListStreamsResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.StreamService_ListStreams_FullMethodName, r, x.s.ListStreams)
}

func (x *chainedConsumer) ListConsumers(ctx context.Context, r *jetgatev1.ListConsumersRequest) (*jetgatev1.ListConsumersResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_ListConsumers_FullMethodName, r, x.c.ListConsumers)
}

func (x *chainedConsumer) ListLeases(ctx context.Context, r *jetgatev1.ListLeasesRequest) (*jetgatev1.ListLeasesResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_ListLeases_FullMethodName, r, x.c.ListLeases)
}

func (x *chainedConsumer) ListDeadLetters(ctx context.Context, r *jetgatev1.ListDeadLettersRequest) (*jetgatev1.ListDeadLettersResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_ListDeadLetters_FullMethodName, r, x.c.ListDeadLetters)
}
