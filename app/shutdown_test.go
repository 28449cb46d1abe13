package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A shutdown stops taking gRPC calls at once, while a REST long-poll still
// runs out its grace: the gRPC server was stopped only once the HTTP one had,
// taking new Fetches (new leases) meanwhile, and was then cut without a
// grace of its own.
func TestShutdownStopsTakingGRPCCallsWhileRESTFinishes(t *testing.T) {
	o := testOptions(t)
	o.ShutdownGrace = 10 * time.Second
	p := start(t, o)
	cc, _ := grpcClients(t, p.GRPC)
	polled := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing:fetch", strings.NewReader(`{"expires":"8s"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		polled <- err
	}()
	natstest.Eventually(t, 5*time.Second, "the REST long-poll waiting", func() bool {
		info, err := cc.GetConsumer(ctxT(t), &jetgatev1.GetConsumerRequest{Stream: "ORDERS", Consumer: "billing"})
		return err == nil && info.GetState().GetNumWaiting() > 0
	})
	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop() }()
	began := time.Now()
	for {
		_, err := cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Expires: durationpb.New(0)})
		if status.Code(err) == codes.Unavailable {
			break
		}
		if time.Since(began) > 4*time.Second {
			t.Fatalf("gRPC still took calls %v into the shutdown, while a REST long-poll of 8s ran (last: %v)", time.Since(began).Round(time.Second), err)
		}
	}
	if err := <-stopped; err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := <-polled; err != nil {
		t.Errorf("the REST long-poll was cut: %v", err)
	}
}
