package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
)

// jetgateConns are the client ids of the connections jetgate holds on ns.
func jetgateConns(t *testing.T, ns *natsserver.Server) []uint64 {
	t.Helper()
	cz, err := ns.Connz(&natsserver.ConnzOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, c := range cz.Conns {
		if c.Name == "jetgate" {
			ids = append(ids, c.Cid)
		}
	}
	return ids
}

// The server kicking jetgate's connection (as `nats server request kick`
// does) while callers fetch and settle costs a reconnect and nothing more:
// readiness comes back and every message is acked in the end.
func TestKickedNATSConnectionHealsAndLosesNothing(t *testing.T) {
	ns := natstest.Start(t)
	o := testOptions(t)
	o.NATSURL, o.NATSListen, o.StreamSubjects = ns.ClientURL(), "", []string{"orders.>"}
	o.AckWait = 2 * time.Second
	p := start(t, o)
	cc, sc := grpcClients(t, p.GRPC)
	const n = 300
	for i := range n {
		publish(t, sc, "orders.kick", fmt.Sprint(i))
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r, err := cc.Fetch(ctx, &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 10, Expires: durationpb.New(300 * time.Millisecond)})
				if err != nil || len(r.GetMessages()) == 0 {
					continue // UNAVAILABLE while the connection is down
				}
				var toks []string
				for _, m := range r.GetMessages() {
					toks = append(toks, m.GetToken())
				}
				_, _ = cc.Ack(ctx, &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: toks})
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()

	for kick := range 5 {
		ids := jetgateConns(t, ns)
		if len(ids) != 1 {
			t.Fatalf("kick %d: jetgate has %d connections on the server; want 1", kick, len(ids))
		}
		if err := ns.DisconnectClientByID(ids[0]); err != nil {
			t.Fatal(err)
		}
		natstest.Eventually(t, 10*time.Second, "jetgate reconnects and is ready", func() bool {
			now := jetgateConns(t, ns)
			if len(now) != 1 || now[0] == ids[0] {
				return false
			}
			resp, err := http.Get("http://" + p.HTTP + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	natstest.Eventually(t, 30*time.Second, "every message acked", func() bool {
		ci := consumerInfo(t, ns.ClientURL(), "ORDERS", "billing")
		return ci.AckFloor.Stream == n && ci.NumAckPending == 0 && ci.NumPending == 0
	})
}

// A server that closes the connection for good (here: a control line over
// its max_control_line, which nats.go takes as fatal) stops the process with
// an error, so that an orchestrator starts it again, rather than leaving it
// up and unable to serve.
func TestNATSConnectionClosedForGoodStopsRunWithAnError(t *testing.T) {
	ns := natstest.StartWith(t, &natsserver.Options{MaxControlLine: 1024})
	o := testOptions(t)
	o.NATSURL, o.NATSListen, o.StreamSubjects = ns.ClientURL(), "", []string{"orders.>"}
	started := make(chan Addrs, 1)
	o.Started = func(a Addrs) { started <- a }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	var a Addrs
	select {
	case a = <-started:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	_, sc := grpcClients(t, a.GRPC)
	// Within jetgate's bound on subjects, beyond this server's line.
	_, _ = sc.Publish(ctxT(t), &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders." + strings.Repeat("x", 2000)})
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "closed for good") {
			t.Fatalf("Run returned %v; want the closed connection", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still serving 20s after its NATS connection was closed for good")
	}
}

func TestCleanStopLogsNoWarning(t *testing.T) {
	for _, remote := range []bool{false, true} {
		t.Run(fmt.Sprintf("remote NATS %v", remote), func(t *testing.T) {
			var logs syncBuffer
			o := testOptions(t)
			if remote {
				o.NATSURL, o.NATSListen, o.StreamSubjects = natstest.Start(t).ClientURL(), "", []string{"orders.>"}
			}
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			p := start(t, o)
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
			if n := logs.count("level=WARN") - logs.count("level=WARN", "no token key file"); n != 0 {
				t.Errorf("a clean stop logged %d warnings", n)
			}
			if n := logs.count("level=ERROR"); n != 0 {
				t.Errorf("a clean stop logged %d errors", n)
			}
		})
	}
}

// A dashboard's rate() needs a first sample: the counters of every known
// label value are there, at zero, before anything happens.
func TestCountersStartAtZero(t *testing.T) {
	p := start(t, testOptions(t))
	body := scrape(t, "http://"+p.HTTP+"/metrics")
	for _, want := range []string{
		`jetgate_fetched_messages_total{consumer="billing",stream="ORDERS"} 0`,
		`jetgate_fetch_empty_total{consumer="billing",reason="no_messages",stream="ORDERS"} 0`,
		`jetgate_fetch_empty_total{consumer="billing",reason="max_ack_pending",stream="ORDERS"} 0`,
		`jetgate_settles_total{consumer="billing",op="ACK",result="OK",stream="ORDERS"} 0`,
		`jetgate_settles_total{consumer="billing",op="NAK",result="OK",stream="ORDERS"} 0`,
		`jetgate_settles_total{consumer="billing",op="TERM",result="OK",stream="ORDERS"} 0`,
		`jetgate_settles_total{consumer="billing",op="EXTEND",result="OK",stream="ORDERS"} 0`,
		`jetgate_forwards_total{result="ok"} 0`,
		`jetgate_forwards_total{result="issuer_gone"} 0`,
		`jetgate_forwards_total{result="forged"} 0`,
		`jetgate_denied_total{reason="UNAUTHENTICATED"} 0`,
		`jetgate_denied_total{reason="PERMISSION_DENIED"} 0`,
		`jetgate_orphans_total{consumer="billing",outcome="naked",stream="ORDERS"} 0`,
		`jetgate_pulls_abandoned{consumer="billing",stream="ORDERS"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// The dead-letter gauge follows a Term within a few seconds, and starts at
// zero.
func TestDeadLetterGaugeIsFresh(t *testing.T) {
	file := writeConfig(t, `
streams:
  - {name: ORDERS, subjects: ["orders.>"]}
  - {name: DEAD, subjects: ["dead.>"]}
consumers:
  - {stream: ORDERS, name: billing, dead_letter: {subject: dead.billing, on_term: true}}
`)
	o := fileOptions(t, file)
	p := start(t, o)
	gauge := `jetgate_dead_letters{consumer="billing",stream="ORDERS"} `
	if body := scrape(t, "http://"+p.HTTP+"/metrics"); !strings.Contains(body, gauge+"0") {
		t.Errorf("/metrics lacks %s0 at start", gauge)
	}
	cc, sc := grpcClients(t, p.GRPC)
	publish(t, sc, "orders.dead", "x")
	msgs := fetch(t, cc, "billing", 1, 5*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("fetched %d; want 1", len(msgs))
	}
	if _, err := cc.Term(ctxT(t), &jetgatev1.TermRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[0].GetToken()}}); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 8*time.Second, "the gauge shows the dead letter", func() bool {
		return strings.Contains(scrape(t, "http://"+p.HTTP+"/metrics"), gauge+"1")
	})
}

// A thousand junk tokens of 4 KB, a request under the limit, answer within
// what a default gRPC client accepts, each failure with its index.
func TestJunkTokensAnswerWithinADefaultClientsLimit(t *testing.T) {
	p := start(t, testOptions(t))
	cc, _ := grpcClients(t, p.GRPC)
	toks := make([]string, 1000)
	for i := range toks {
		toks[i] = fmt.Sprintf("%04d", i) + strings.Repeat("j", 3996)
	}
	resp, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: toks})
	if err != nil {
		t.Fatalf("Ack of 1000 junk tokens: %v (code %v)", err, status.Code(err))
	}
	if len(resp.GetFailures()) != len(toks) {
		t.Fatalf("%d failures; want %d", len(resp.GetFailures()), len(toks))
	}
	for i, f := range resp.GetFailures() {
		if int(f.GetIndex()) != i || f.GetReason() != "TOKEN_INVALID" || f.GetCode() != int32(codes.InvalidArgument) {
			t.Fatalf("failure %d: %v", i, f)
		}
		if tok := f.GetToken(); len(tok) > 64 || !strings.HasPrefix(tok, fmt.Sprintf("%04d", i)) {
			t.Fatalf("failure %d echoes %d bytes (%.40q); want a cut form of the token", i, len(tok), tok)
		}
	}
}

// jetgate_nats_connected is 1 while the replica's NATS connection is up and
// 0 while it is away: what an alert on a lost NATS reads.
func TestNATSConnectedGauge(t *testing.T) {
	ns := natstest.Start(t)
	o := testOptions(t)
	o.NATSURL, o.NATSListen, o.StreamSubjects = ns.ClientURL(), "", []string{"orders.>"}
	p := start(t, o)
	if body := scrape(t, "http://"+p.HTTP+"/metrics"); !strings.Contains(body, "jetgate_nats_connected 1") {
		t.Fatal("/metrics lacks jetgate_nats_connected 1 while connected")
	}
	ns.Shutdown()
	natstest.Eventually(t, 10*time.Second, "the gauge at 0", func() bool {
		return strings.Contains(scrape(t, "http://"+p.HTTP+"/metrics"), "jetgate_nats_connected 0")
	})
}

// A NATS connection that stalls without closing (a proxy that stops
// forwarding, no FIN, no RST) while jetgate waits on it is given up by the
// stall watch (stall.go), not left to the pings (30s): a Publish in the
// stall fails UNAVAILABLE, readiness fails, jetgate_nats_stalls_total counts
// one, and once a path to NATS is back the connection is replaced and
// nothing published before the stall is lost.
func TestAStalledNATSConnectionIsReplaced(t *testing.T) {
	ns := natstest.Start(t)
	proxy := natstest.StartProxy(t, ns.Addr().String())
	o := testOptions(t)
	o.NATSURL, o.NATSListen, o.StreamSubjects = "nats://"+proxy.Addr, "", []string{"orders.>"}
	p := start(t, o)
	cc, sc := grpcClients(t, p.GRPC)
	seq := publish(t, sc, "orders.stall", "before")
	ready := func() bool {
		resp, err := http.Get("http://" + p.HTTP + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if body := scrape(t, "http://"+p.HTTP+"/metrics"); !strings.Contains(body, "jetgate_nats_stalls_total 0") {
		t.Fatal("/metrics lacks jetgate_nats_stalls_total 0 before the stall")
	}
	proxy.Blackhole()
	_, err := sc.Publish(ctxT(t), &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.stall", Data: []byte("in the stall")})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("publish in the stall: %v; want UNAVAILABLE", err)
	}
	natstest.Eventually(t, 45*time.Second, "the stalled connection given up", func() bool { return !ready() })
	if body := scrape(t, "http://"+p.HTTP+"/metrics"); !strings.Contains(body, "jetgate_nats_stalls_total 1") {
		t.Fatalf("jetgate_nats_stalls_total is not 1 once the stalled connection was given up: the pings found it, not the stall watch\n%s", body)
	}
	proxy.Thaw()
	natstest.Eventually(t, 30*time.Second, "a new connection, ready", ready)
	msgs := fetch(t, cc, "billing", 2, 2*time.Second)
	if len(msgs) == 0 || msgs[0].GetMetadata().GetStreamSeq() != seq {
		t.Fatalf("after the stall: %v; want the message published before it first", msgs)
	}
}
