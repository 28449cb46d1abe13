package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
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

// consumeOne opens a Consume stream of billing and returns it once it
// handed out a message, with that message.
func consumeOne(t *testing.T, ctx context.Context, cc jetgatev1.ConsumerServiceClient, autoExtend bool) (jetgatev1.ConsumerService_ConsumeClient, *jetgatev1.Message) {
	t.Helper()
	st, err := cc.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing", AutoExtend: autoExtend})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("the stream ended before its message: %v", err)
		}
		if len(r.GetMessages()) > 0 {
			return st, r.GetMessages()[0]
		}
	}
}

// holdOne is consumeOne with the stream read on to its end, which ended
// reports.
func holdOne(t *testing.T, cc jetgatev1.ConsumerServiceClient, autoExtend bool) (m *jetgatev1.Message, ended <-chan error) {
	t.Helper()
	st, m := consumeOne(t, t.Context(), cc, autoExtend)
	end := make(chan error, 1)
	go func() {
		for {
			if _, err := st.Recv(); err != nil {
				end <- err
				return
			}
		}
	}()
	return m, end
}

// A stop ends the callers' Consume streams at once, UNAVAILABLE, rather
// than hold them, and the stop, for its whole grace while their callers
// could settle nothing (a reviewer: a client library's held messages each
// ran twice). Their leases stay theirs: not nak'ed, settled through the
// next jetgate.
func TestAStopEndsConsumeStreamsAndLeavesTheirLeasesToTheirCallers(t *testing.T) {
	ns := natstest.Start(t)
	key := writeKeyFile(t, "0123456789abcdefghijklmnopqrstuvwxyzABCD")
	o := testOptions(t)
	o.NATSURL, o.TokenKeyFile, o.ShutdownGrace = ns.ClientURL(), key, 5*time.Minute
	o.StreamSubjects = []string{"orders.>"}
	p1 := start(t, o)
	cc, sc := grpcClients(t, p1.GRPC)
	publish(t, sc, "orders.new", "held")
	m, ended := holdOne(t, cc, false)
	stopped := make(chan error, 1)
	go func() { stopped <- p1.Stop() }()
	select {
	case err := <-ended:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("the stream ended with %v; want UNAVAILABLE", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream was still open 30s into a stop (grace 5m)")
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if ci := consumerInfo(t, ns.ClientURL(), "ORDERS", "billing"); ci.NumAckPending != 1 || ci.NumRedelivered != 0 {
		t.Fatalf("after the stop: %d pending acks, %d redelivered; want the lease still its caller's (1, 0)", ci.NumAckPending, ci.NumRedelivered)
	}
	o2 := testOptions(t)
	o2.NATSURL, o2.TokenKeyFile, o2.StreamSubjects = ns.ClientURL(), key, []string{"orders.>"}
	p2 := start(t, o2)
	cc2, _ := grpcClients(t, p2.GRPC)
	ack, err := cc2.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{m.GetToken()}})
	if err != nil || len(ack.GetFailures()) != 0 {
		t.Fatalf("the caller's Ack through the next jetgate: %v %v", ack, err)
	}
	if ci := consumerInfo(t, ns.ClientURL(), "ORDERS", "billing"); ci.NumAckPending != 0 {
		t.Fatalf("%d pending acks after the Ack; want 0", ci.NumAckPending)
	}
}

// A message a caller's stream gave back (the caller left) as a jetgate of
// embedded NATS stops is redelivered as soon as it starts again, not after
// ack_wait: the Nak is one the server stores (a reviewer: a plain Nak lives
// in the server's memory only, and the message came back 30s later, a
// delivery spent).
func TestAStopsNakOutlivesTheEmbeddedServer(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	o.DataDir = dir
	p1 := start(t, o)
	cc, sc := grpcClients(t, p1.GRPC)
	publish(t, sc, "orders.new", "held")
	ctx, leave := context.WithCancel(t.Context())
	consumeOne(t, ctx, cc, false)
	leave()
	if err := p1.Stop(); err != nil {
		t.Fatal(err)
	}

	o2 := testOptions(t)
	o2.DataDir = dir
	p2 := start(t, o2)
	cc, _ = grpcClients(t, p2.GRPC)
	msgs := fetch(t, cc, "billing", 1, 10*time.Second) // ack_wait is 30s
	if len(msgs) != 1 {
		t.Fatal("the message the stream gave back did not come back within 10s of the start (ack_wait 30s)")
	}
	if d := msgs[0].GetMetadata().GetNumDelivered(); d != 2 {
		t.Errorf("delivered %d times; want 2", d)
	}
}

// The stop of an auto_extend stream gives back the leases it kept alive
// past the deadline of the token their caller holds (a reviewer's finding):
// no replica would settle them on that token, and kept, they came back only
// after the last keep-alive's ack_wait.
func TestAStopGivesBackWhatAutoExtendKeptPastItsToken(t *testing.T) {
	ns := natstest.Start(t)
	key := writeKeyFile(t, "0123456789abcdefghijklmnopqrstuvwxyzABCD")
	o := testOptions(t)
	o.NATSURL, o.TokenKeyFile, o.StreamSubjects, o.AckWait = ns.ClientURL(), key, []string{"orders.>"}, 6*time.Second
	p1 := start(t, o)
	cc, sc := grpcClients(t, p1.GRPC)
	publish(t, sc, "orders.new", "held")
	m, _ := holdOne(t, cc, true)
	tokenEnds := m.GetLeaseDeadline().AsTime()
	natstest.Eventually(t, 20*time.Second, "the lease kept alive past its token's deadline", func() bool {
		return time.Now().After(tokenEnds.Add(200 * time.Millisecond))
	})
	if ci := consumerInfo(t, ns.ClientURL(), "ORDERS", "billing"); ci.NumRedelivered != 0 {
		t.Fatalf("the message was redelivered while auto_extend held it: %+v", ci)
	}
	if err := p1.Stop(); err != nil {
		t.Fatal(err)
	}
	o2 := testOptions(t)
	o2.NATSURL, o2.TokenKeyFile, o2.StreamSubjects, o2.AckWait = ns.ClientURL(), key, []string{"orders.>"}, 6*time.Second
	p2 := start(t, o2)
	cc2, _ := grpcClients(t, p2.GRPC)
	msgs := fetch(t, cc2, "billing", 1, 1500*time.Millisecond)
	if len(msgs) != 1 || msgs[0].GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("right after the stop: %v; want the message given back, its second delivery (ack_wait 6s)", msgs)
	}
}

// A REST Consume ended by a stop says so, with a reason of its own, not
// NATS_UNAVAILABLE (a reviewer's finding: callers and alerts took a stop for
// NATS being away).
func TestARESTConsumeEndedByAStopSaysSo(t *testing.T) {
	p := start(t, testOptions(t))
	_, sc := grpcClients(t, p.GRPC)
	publish(t, sc, "orders.new", "held")
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing:consume", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("REST Consume: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() && !strings.Contains(lines.Text(), "token") {
	}
	go func() { _ = p.Stop() }()
	var last string
	for lines.Scan() {
		last = lines.Text()
	}
	if !strings.Contains(last, `"reason":"GATEWAY_STOPPING"`) || !strings.Contains(last, "gateway stopping") || !strings.Contains(last, `"code":14`) {
		t.Fatalf("the stream's last line: %s; want UNAVAILABLE GATEWAY_STOPPING, saying the gateway is stopping", last)
	}
}

// What a caller extended itself on an auto_extend stream stays its own at a
// stop, though the first token's deadline has passed: its Extend gave it a
// later token, which the next jetgate settles.
func TestAStopLeavesWhatTheCallerExtendedItselfToIt(t *testing.T) {
	ns := natstest.Start(t)
	key := writeKeyFile(t, "0123456789abcdefghijklmnopqrstuvwxyzABCD")
	opts := func() Options {
		o := testOptions(t)
		o.NATSURL, o.TokenKeyFile, o.StreamSubjects, o.AckWait = ns.ClientURL(), key, []string{"orders.>"}, 6*time.Second
		return o
	}
	p1 := start(t, opts())
	cc, sc := grpcClients(t, p1.GRPC)
	publish(t, sc, "orders.new", "held")
	m, _ := holdOne(t, cc, true)
	first := m.GetLeaseDeadline().AsTime()
	natstest.Eventually(t, 20*time.Second, "halfway to the first token's deadline", func() bool { return time.Now().After(first.Add(-3 * time.Second)) })
	ext, err := cc.Extend(ctxT(t), &jetgatev1.ExtendRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{m.GetToken()}})
	if err != nil || len(ext.GetFailures()) != 0 || len(ext.GetLeases()) != 1 {
		t.Fatalf("the caller's Extend: %v %v", ext, err)
	}
	later := ext.GetLeases()[0]
	natstest.Eventually(t, 20*time.Second, "past the first token's deadline", func() bool { return time.Now().After(first.Add(200 * time.Millisecond)) })
	if err := p1.Stop(); err != nil {
		t.Fatal(err)
	}
	p2 := start(t, opts())
	cc2, _ := grpcClients(t, p2.GRPC)
	ack, err := cc2.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{later.GetNewToken()}})
	if err != nil || len(ack.GetFailures()) != 0 {
		t.Fatalf("the Ack of the caller's later token (deadline %v) through the next jetgate: %v %v", later.GetLeaseDeadline().AsTime(), ack, err)
	}
	if ci := consumerInfo(t, ns.ClientURL(), "ORDERS", "billing"); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Fatalf("after the Ack: %d pending, %d redelivered; want 0, 0 (never given back)", ci.NumAckPending, ci.NumRedelivered)
	}
}

// A stream that NATS going away ended gives back nothing its caller holds,
// auto_extend's past its token included: its issuer is still there and
// settles that token (a reviewer's finding, against a first form that gave
// them back at any end: the message was redelivered as soon as NATS was
// back, while its caller still worked on it).
func TestNATSAwayGivesBackNothingTheIssuerStillSettles(t *testing.T) {
	ns := natstest.Start(t)
	px := natstest.StartProxy(t, ns.Addr().String())
	o := testOptions(t)
	o.NATSURL, o.StreamSubjects, o.AckWait = "nats://"+px.Addr, []string{"orders.>"}, 12*time.Second
	p := start(t, o)
	cc, sc := grpcClients(t, p.GRPC)
	publish(t, sc, "orders.new", "held")
	m, ended := holdOne(t, cc, true)
	first := m.GetLeaseDeadline().AsTime()
	natstest.Eventually(t, 30*time.Second, "past the first token's deadline", func() bool { return time.Now().After(first.Add(500 * time.Millisecond)) })
	px.Cut()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end with NATS away")
	}
	px.Mend()
	natstest.Eventually(t, 10*time.Second, "ready again", func() bool {
		resp, err := http.Get("http://" + p.HTTP + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if got := fetch(t, cc, "billing", 1, 2*time.Second); len(got) > 0 {
		t.Fatalf("redelivered (delivery %d) while its issuer still held it for the caller", got[0].GetMetadata().GetNumDelivered())
	}
	ack, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{m.GetToken()}})
	if err != nil || len(ack.GetFailures()) != 0 {
		t.Fatalf("the caller's Ack of its token through its issuer: %v %v", ack, err)
	}
}

// A stop ends the Fetches that wait, gRPC and REST, at once and empty, as if
// they expired: the caller fetches again elsewhere. Before, a long poll held
// the stop until it expired (here after 4 minutes), or until the grace cut
// it UNAVAILABLE.
func TestAStopEndsWaitingFetchesEmpty(t *testing.T) {
	o := fileOptions(t, writeConfig(t, `
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
limits: {max_expires: 10m}
`))
	o.ShutdownGrace = 5 * time.Minute
	p := start(t, o)
	cc, _ := grpcClients(t, p.GRPC)
	type answer struct {
		res *jetgatev1.FetchResponse
		err error
	}
	grpcDone := make(chan answer, 1)
	go func() {
		res, err := cc.Fetch(t.Context(), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 1, Expires: durationpb.New(4 * time.Minute)})
		grpcDone <- answer{res, err}
	}()
	restDone := make(chan string, 1)
	go func() {
		resp, err := http.Post("http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing:fetch", "application/json", strings.NewReader(`{"batch":1,"expires":"240s"}`))
		if err != nil {
			restDone <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		restDone <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	natstest.Eventually(t, 10*time.Second, "both Fetches' pulls open", func() bool {
		return strings.Contains(scrape(t, "http://"+p.HTTP+"/metrics"), `jetgate_pulls_open{consumer="billing",stream="ORDERS"} 2`)
	})
	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop() }()
	select {
	case a := <-grpcDone:
		if a.err != nil || len(a.res.GetMessages()) != 0 || a.res.GetEmptyReason() != jetgatev1.EmptyReason_EMPTY_REASON_NO_MESSAGES {
			t.Errorf("the gRPC Fetch ended %v %v; want an empty answer, NO_MESSAGES", a.res, a.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the gRPC Fetch still waited 30s into a stop (grace 5m)")
	}
	select {
	case got := <-restDone:
		if !strings.HasPrefix(got, "200 ") || strings.Contains(got, `"token"`) {
			t.Errorf("the REST Fetch ended %s; want 200 and no message", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the REST Fetch still waited 30s into a stop (grace 5m)")
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
