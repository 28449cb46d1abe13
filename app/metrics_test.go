package app

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

func TestMetricsCountLeasesAndSettles(t *testing.T) {
	p := start(t, testOptions(t))
	cons, strm := grpcClients(t, p.GRPC)
	ctx := t.Context()
	for i := 0; i < 3; i++ {
		if _, err := strm.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.m", Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := cons.Fetch(ctx, &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 3, Expires: durationpb.New(time.Second)})
	if err != nil || len(resp.GetMessages()) != 3 {
		t.Fatalf("fetch: %v, %d messages", err, len(resp.GetMessages()))
	}
	ack, err := cons.Ack(ctx, &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing",
		Tokens: []string{resp.GetMessages()[0].GetToken(), "not-a-token"}})
	if err != nil || len(ack.GetFailures()) != 1 {
		t.Fatalf("ack: %v %v", err, ack.GetFailures())
	}
	if resp, err := cons.Fetch(ctx, &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 1, Expires: durationpb.New(0)}); err != nil || len(resp.GetMessages()) != 0 {
		t.Fatalf("fetch with none left: %v, %d messages", err, len(resp.GetMessages()))
	}
	body := scrape(t, "http://"+p.HTTP+"/metrics")
	for _, want := range []string{
		`jetgate_fetched_messages_total{consumer="billing",stream="ORDERS"} 3`,
		`jetgate_fetch_empty_total{consumer="billing",reason="no_messages",stream="ORDERS"} 1`,
		`jetgate_settles_total{consumer="billing",op="ACK",result="OK",stream="ORDERS"} 1`,
		`jetgate_settles_total{consumer="billing",op="ACK",result="TOKEN_INVALID",stream="ORDERS"} 1`,
		`jetgate_rpc_duration_seconds_count{code="OK",method="Fetch"} 2`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The live-lease gauge follows the table: two left, within a sweep.
	natstest.Eventually(t, 5*time.Second, "jetgate_leases_live shows the 2 unsettled leases", func() bool {
		return strings.Contains(scrape(t, "http://"+p.HTTP+"/metrics"), `jetgate_leases_live{consumer="billing",stream="ORDERS"} 2`)
	})
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// A Consume is timed as any call, over gRPC and REST: one refused (here,
// a consumer jetgate does not serve) is a call failing with that code, as
// the dashboard's calls by code and the NATS alert read it.
func TestMetricsCountConsumeStreams(t *testing.T) {
	p := start(t, testOptions(t))
	cons, _ := grpcClients(t, p.GRPC)
	st, err := cons.Consume(t.Context(), &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err == nil {
		t.Fatal("a Consume of a consumer jetgate does not serve was not refused")
	}
	resp, err := http.Post("http://"+p.HTTP+"/v1/streams/ORDERS/consumers/nobody:consume", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("REST Consume of a consumer jetgate does not serve: %d", resp.StatusCode)
	}
	want := `jetgate_rpc_duration_seconds_count{code="NotFound",method="Consume"} 2`
	if body := scrape(t, "http://"+p.HTTP+"/metrics"); !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
