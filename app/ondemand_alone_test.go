package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// operatorConsumer creates a durable pull consumer of ORDERS as an
// operator's tools would, and publishes msgs to it, over a connection of
// its own.
func operatorConsumer(t *testing.T, natsURL, name string, msgs ...string) {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := js.Publish(ctx, "orders."+name, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
}

// A gateway whose file has only on_demand starts and serves a consumer an
// operator made after it started: Fetch over gRPC, Ack over REST, and the
// server sees the ack. A name that matches no pattern is NOT_FOUND.
func TestOnDemandAloneFileServes(t *testing.T) {
	p := start(t, fileOptions(t, writeConfig(t, "on_demand: {match: [{stream: ORDERS, consumer: team-*}]}\n")))
	operatorConsumer(t, p.NATS, "team-a", "hello")
	cc, _ := grpcClients(t, p.GRPC)
	f, err := cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "team-a", Batch: 10, Expires: durationpb.New(2 * time.Second)})
	if err != nil || len(f.GetMessages()) != 1 || string(f.GetMessages()[0].GetData()) != "hello" {
		t.Fatalf("fetch: %v %v; want the operator's message", f.GetMessages(), err)
	}
	var ack struct {
		Failures []any `json:"failures"`
	}
	restCall(t, p.HTTP, "/v1/streams/ORDERS/consumers/team-a:ack", `{"tokens":["`+f.GetMessages()[0].GetToken()+`"]}`, &ack)
	if len(ack.Failures) != 0 {
		t.Fatalf("ack failures %v", ack.Failures)
	}
	if ci := consumerInfo(t, p.NATS, "ORDERS", "team-a"); ci.NumAckPending != 0 || ci.AckFloor.Stream != 1 || ci.Config.AckWait != time.Minute {
		t.Errorf("after the ack: ack pending %d, floor %d, ack_wait %v; want 0, 1 and the operator's 1m", ci.NumAckPending, ci.AckFloor.Stream, ci.Config.AckWait)
	}
	operatorConsumer(t, p.NATS, "billing")
	_, err = cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 1, Expires: durationpb.New(time.Second)})
	if status.Code(err) != codes.NotFound {
		t.Errorf("a consumer no pattern matches: %v; want NotFound", err)
	}
}

// A gateway that serves on demand alone serves an operator-made consumer
// through any of 3 replicas sharing a NATS server: two from a file with
// only on_demand, one from --on-demand alone. Each fetches a message and
// another settles it.
func TestOnDemandAloneThreeReplicas(t *testing.T) {
	url := natstest.Start(t).ClientURL()
	key := writeKeyFile(t, "on-demand-alone-shared-token-key-0123456789")
	file := writeConfig(t, "on_demand: {match: [{stream: ORDERS, consumer: team-*}]}\n")
	var clients []jetgatev1.ConsumerServiceClient
	for i := range 3 {
		o := fileOptions(t, file)
		o.NATSURL, o.NATSListen, o.TokenKeyFile = url, "", key
		o.Given["nats-url"], o.Given["token-key-file"] = true, true
		if i == 2 { // no file: the flags alone, no --consumer
			o = testOptions(t)
			o.NATSURL, o.NATSListen, o.TokenKeyFile, o.OnDemand = url, "", key, []string{"ORDERS/team-*"}
		}
		cc, _ := grpcClients(t, start(t, o).GRPC)
		clients = append(clients, cc)
	}
	operatorConsumer(t, url, "team-b", "m1", "m2", "m3")
	for i, cc := range clients {
		f, err := cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "team-b", Batch: 1, Expires: durationpb.New(2 * time.Second)})
		if err != nil || len(f.GetMessages()) != 1 || string(f.GetMessages()[0].GetData()) != fmt.Sprintf("m%d", i+1) {
			t.Fatalf("fetch through replica %d: %v %v; want m%d", i+1, f.GetMessages(), err, i+1)
		}
		other := clients[(i+1)%3]
		ack, err := other.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "team-b", Tokens: []string{f.GetMessages()[0].GetToken()}})
		if err != nil || len(ack.GetFailures()) != 0 {
			t.Fatalf("ack through replica %d of replica %d's message: %v %v", (i+1)%3+1, i+1, ack.GetFailures(), err)
		}
	}
	if ci := consumerInfo(t, url, "ORDERS", "team-b"); ci.NumAckPending != 0 || ci.AckFloor.Stream != 3 || ci.NumPending != 0 {
		t.Errorf("after the acks: ack pending %d, floor %d, pending %d; want 0, 3, 0", ci.NumAckPending, ci.AckFloor.Stream, ci.NumPending)
	}
}
