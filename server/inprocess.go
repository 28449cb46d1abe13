package server

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/core"
)

// Chain composes unary interceptors in order, the first outermost, as
// grpc.ChainUnaryInterceptor does on a server.
func Chain(ints ...grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		next := h
		for i := len(ints) - 1; i >= 0; i-- {
			in, inner := ints[i], next
			next = func(ctx context.Context, req any) (any, error) { return in(ctx, req, info, inner) }
		}
		return next(ctx, req)
	}
}

// InProcess returns the services backed by r for a caller in this process
// (the REST side): every unary call runs through chain, the interceptors
// the gRPC server runs, so auth, metrics and error mapping are the same; it
// only skips the encoding and transport of a gRPC hop. Consume, a stream,
// is not served here.
func InProcess(r *core.Replica, log *slog.Logger, chain grpc.UnaryServerInterceptor) (jetgatev1.ConsumerServiceServer, jetgatev1.StreamServiceServer) {
	c, s := services(r, log)
	return &chainedConsumer{c: c, chain: chain}, &chainedStream{s: s, chain: chain}
}

// invoke runs one call through chain as the gRPC server would.
func invoke[Req, Resp any](ctx context.Context, chain grpc.UnaryServerInterceptor, method string, req Req, h func(context.Context, Req) (Resp, error)) (Resp, error) {
	out, err := chain(ctx, req, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, r any) (any, error) {
		return h(ctx, r.(Req))
	})
	if err != nil {
		var zero Resp
		return zero, err
	}
	return out.(Resp), nil
}

type chainedConsumer struct {
	jetgatev1.UnimplementedConsumerServiceServer
	c     jetgatev1.ConsumerServiceServer
	chain grpc.UnaryServerInterceptor
}

func (x *chainedConsumer) Fetch(ctx context.Context, r *jetgatev1.FetchRequest) (*jetgatev1.FetchResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Fetch_FullMethodName, r, x.c.Fetch)
}

func (x *chainedConsumer) Ack(ctx context.Context, r *jetgatev1.AckRequest) (*jetgatev1.AckResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Ack_FullMethodName, r, x.c.Ack)
}

func (x *chainedConsumer) Nak(ctx context.Context, r *jetgatev1.NakRequest) (*jetgatev1.NakResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Nak_FullMethodName, r, x.c.Nak)
}

func (x *chainedConsumer) Term(ctx context.Context, r *jetgatev1.TermRequest) (*jetgatev1.TermResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Term_FullMethodName, r, x.c.Term)
}

func (x *chainedConsumer) Extend(ctx context.Context, r *jetgatev1.ExtendRequest) (*jetgatev1.ExtendResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Extend_FullMethodName, r, x.c.Extend)
}

func (x *chainedConsumer) GetConsumer(ctx context.Context, r *jetgatev1.GetConsumerRequest) (*jetgatev1.GetConsumerResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_GetConsumer_FullMethodName, r, x.c.GetConsumer)
}

func (x *chainedConsumer) Redrive(ctx context.Context, r *jetgatev1.RedriveRequest) (*jetgatev1.RedriveResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Redrive_FullMethodName, r, x.c.Redrive)
}

func (x *chainedConsumer) Pause(ctx context.Context, r *jetgatev1.PauseRequest) (*jetgatev1.PauseResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Pause_FullMethodName, r, x.c.Pause)
}

func (x *chainedConsumer) Resume(ctx context.Context, r *jetgatev1.ResumeRequest) (*jetgatev1.ResumeResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Resume_FullMethodName, r, x.c.Resume)
}

func (x *chainedConsumer) Unpin(ctx context.Context, r *jetgatev1.UnpinRequest) (*jetgatev1.UnpinResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.ConsumerService_Unpin_FullMethodName, r, x.c.Unpin)
}

type chainedStream struct {
	jetgatev1.UnimplementedStreamServiceServer
	s     jetgatev1.StreamServiceServer
	chain grpc.UnaryServerInterceptor
}

func (x *chainedStream) Publish(ctx context.Context, r *jetgatev1.PublishRequest) (*jetgatev1.PublishResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.StreamService_Publish_FullMethodName, r, x.s.Publish)
}

func (x *chainedStream) PublishBatch(ctx context.Context, r *jetgatev1.PublishBatchRequest) (*jetgatev1.PublishBatchResponse, error) {
	return invoke(ctx, x.chain, jetgatev1.StreamService_PublishBatch_FullMethodName, r, x.s.PublishBatch)
}
