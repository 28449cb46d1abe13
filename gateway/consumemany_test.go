package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/app"
	"github.com/jetgate/jetgate/internal/natstest"
)

// REST Consume streams all reach the services over the REST side's one
// in-memory gRPC connection, so that connection must not cap them at what
// one gRPC caller's connection may run at once: past it, a REST caller's
// stream would hang unanswered until another ended. The cap is lowered to 4
// so that the proof takes 12 streams, not a thousand connections.
func TestRESTConsumeIsNotCappedByTheInnerConnection(t *testing.T) {
	const capped, streams = 4, 12
	a := startApp(t, func(o *app.Options) { o.StreamsPerConnection = capped })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The cap holds for a gRPC caller: a fifth stream on one connection
	// waits until one of the four ends.
	conn, err := grpc.NewClient(a.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cons := jetgatev1.NewConsumerServiceClient(conn)
	consume := func(ctx context.Context) <-chan error {
		answered := make(chan error, 1)
		go func() {
			s, err := cons.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing",
				MaxMessages: 1, Heartbeat: durationpb.New(200 * time.Millisecond)})
			if err == nil {
				_, err = s.Recv()
			}
			answered <- err
		}()
		return answered
	}
	first, endFirst := context.WithCancel(ctx)
	defer endFirst()
	if err := <-consume(first); err != nil {
		t.Fatalf("gRPC stream 1: %v", err)
	}
	for i := 2; i <= capped; i++ {
		if err := <-consume(ctx); err != nil {
			t.Fatalf("gRPC stream %d: %v", i, err)
		}
	}
	fifth := consume(ctx)

	// REST streams, three times the cap, all answer meanwhile.
	answered := openRESTConsumes(ctx, t, a, streams)
	natstest.Eventually(t, 30*time.Second, "every REST Consume stream answering", func() bool {
		return answered.Load() == streams
	})
	select {
	case err := <-fifth:
		t.Fatalf("a fifth gRPC stream on a connection capped at %d ran (%v)", capped, err)
	default:
	}
	endFirst()
	if err := <-fifth; err != nil {
		t.Fatalf("the fifth gRPC stream, once one ended: %v", err)
	}
}

// openRESTConsumes opens n REST Consume streams until ctx ends, and counts
// those that answered with their first line.
func openRESTConsumes(ctx context.Context, t *testing.T, a app.Addrs, n int) *atomic.Int64 {
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	var answered atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.HTTP+consumerPath+":consume",
				strings.NewReader(`{"maxMessages":1,"heartbeat":"0.2s"}`))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("REST Consume: %v", err)
				}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("REST Consume: %s", resp.Status)
				return
			}
			if bufio.NewScanner(resp.Body).Scan() {
				answered.Add(1)
			}
			<-ctx.Done()
		})
	}
	return &answered
}
