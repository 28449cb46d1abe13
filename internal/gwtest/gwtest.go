// Package gwtest runs a jetgate replica for tests: replica.New on a given NATS
// connection, served over real gRPC on a random port, stopped at the end of
// the test.
package gwtest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/server"
)

// Replica is a served replica and clients of it.
type Replica struct {
	*replica.Replica
	Consumers jetgatev1.ConsumerServiceClient
	Streams   jetgatev1.StreamServiceClient
	stop      func()
}

// Stop stops serving and closes the replica, as a clean shutdown would.
// It is also done at the end of the test.
func (g *Replica) Stop() { g.stop() }

// Start builds a replica with o (a quiet logger and a 2s request timeout
// unless o says otherwise) and serves it on a gRPC server with opts.
func Start(t testing.TB, o replica.Options, opts ...grpc.ServerOption) *Replica {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	gw, err := replica.New(ctx, o)
	if err != nil {
		t.Fatalf("replica: %v", err)
	}
	gs := grpc.NewServer(opts...)
	server.Register(gs, gw, o.Logger, 0)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	g := &Replica{
		Replica:   gw,
		Consumers: jetgatev1.NewConsumerServiceClient(conn),
		Streams:   jetgatev1.NewStreamServiceClient(conn),
	}
	g.stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = conn.Close()
		gs.Stop()
		<-served
		gw.Close()
	}
	t.Cleanup(g.Stop)
	return g
}
