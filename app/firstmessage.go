package app

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"
)

// firstMessage bounds how long a gRPC call may wait for its request: a
// caller that sends a call's headers and never its message would otherwise
// hold the call, and with it its connection and a slot of max_connections,
// for as long as it answers pings (idle_timeout counts a call in flight as
// busy, and grpc-go sets no deadline a caller does not ask for). Credentials
// are checked only once the request has come, so this is a bound on callers
// the listener does not know yet, as REST's read timeout is.
//
// The tap gives every call a context cancelled after wait; the interceptors,
// first in their chains, stop that once the request has come: a unary
// call's before its handler runs, a stream's at its first message. A
// stream's later messages are the caller's business.
type firstMessage struct{ wait time.Duration }

type awaitingKey struct{}

var errNoRequest = errors.New("the call's request did not come in time")

// tap is the listener's grpc.InTapHandle, run as a call's headers arrive.
func (f firstMessage) tap(ctx context.Context, _ *tap.Info) (context.Context, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(f.wait, func() { cancel(errNoRequest) })
	return context.WithValue(ctx, awaitingKey{}, timer), nil
}

// came stops the timer of ctx's call: its request has come.
func came(ctx context.Context) {
	if t, ok := ctx.Value(awaitingKey{}).(*time.Timer); ok {
		t.Stop()
	}
}

func (firstMessage) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	came(ctx)
	return h(ctx, req)
}

func (firstMessage) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &awaitedStream{ServerStream: ss})
}

// awaitedStream stops its call's timer at its first message.
type awaitedStream struct {
	grpc.ServerStream
	came bool
}

func (s *awaitedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if !s.came && err == nil {
		s.came = true
		came(s.Context())
	}
	return err
}
