package server

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/replica"
)

// Local is the REST side's one road into the services: a
// grpc.ClientConnInterface, so that grpc-gateway's generated client handlers
// serve every RPC through it. A unary call runs in this process as the gRPC
// server would run it: through the service descriptor's handler and the
// same interceptor chain, its outgoing metadata (the asserted principal)
// made incoming, without the encoding and transport of a gRPC hop. A
// stream goes over streams, a connection to the gRPC server the services
// are registered on (RegisterREST). A new RPC needs nothing here: it is in
// the descriptors.
type Local struct {
	unary   map[string]localMethod // by full method name
	chain   grpc.UnaryServerInterceptor
	streams grpc.ClientConnInterface
}

type localMethod struct {
	srv     any
	handler grpc.MethodHandler
}

// NewLocal serves the unary RPCs of the services backed by r through the
// interceptors ints, in order (the gRPC server's), and the streams over
// streams. A Consume's stall is the REST side's (RegisterREST's).
func NewLocal(r *replica.Replica, log *slog.Logger, ints []grpc.UnaryServerInterceptor, streams grpc.ClientConnInterface) *Local {
	c, st := services(r, log)
	l := &Local{unary: make(map[string]localMethod), chain: chain(ints), streams: streams}
	for _, d := range []struct {
		desc *grpc.ServiceDesc
		srv  any
	}{{&jetgatev1.ConsumerService_ServiceDesc, c}, {&jetgatev1.StreamService_ServiceDesc, st}} {
		for _, m := range d.desc.Methods {
			l.unary["/"+d.desc.ServiceName+"/"+m.MethodName] = localMethod{srv: d.srv, handler: m.Handler}
		}
	}
	return l
}

// Invoke runs a unary call in process; a method the services do not have
// goes to the gRPC server, which answers it as it answers any caller.
func (l *Local) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	m, ok := l.unary[method]
	if !ok {
		return l.streams.Invoke(ctx, method, args, reply, opts...)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	ctx = metadata.NewIncomingContext(ctx, md)
	resp, err := m.handler(m.srv, ctx, func(in any) error {
		move(in.(proto.Message), args.(proto.Message))
		return nil
	}, l.chain)
	if err != nil {
		return err
	}
	move(reply.(proto.Message), resp.(proto.Message))
	return nil
}

// NewStream opens a stream on the gRPC server.
func (l *Local) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return l.streams.NewStream(ctx, desc, method, opts...)
}

// move sets dst's fields to src's, sharing rather than copying what they
// hold (a batch's messages): src is not used again.
func move(dst, src proto.Message) {
	d := dst.ProtoReflect()
	src.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		d.Set(fd, v)
		return true
	})
}

// chain composes unary interceptors in order, the first outermost, as
// grpc.ChainUnaryInterceptor does on a server.
func chain(ints []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		next := h
		for i := len(ints) - 1; i >= 0; i-- {
			in, inner := ints[i], next
			next = func(ctx context.Context, req any) (any, error) { return in(ctx, req, info, inner) }
		}
		return next(ctx, req)
	}
}
