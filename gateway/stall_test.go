package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/app"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A REST Consume whose caller sends its request and then reads nothing ends
// once a write has waited the stall out: its leases go back at once (not
// after ack_wait, 30s here), rather than the stream holding them and the
// unread messages in the gateway's memory for as long as the caller keeps
// the connection.
func TestRESTConsumeOfACallerThatReadsNothingEnds(t *testing.T) {
	a := startApp(t, func(o *app.Options) { o.ConsumeWriteStall = time.Second })
	publishBig(t, a, bigMessages)
	conn, err := net.Dial("tcp", a.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	body := `{"maxMessages":100,"heartbeat":"0.2s"}`
	if _, err := fmt.Fprintf(conn, "POST %s:consume HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		consumerPath, len(body), body); err != nil {
		t.Fatal(err)
	}

	leasesComeBack(t, a)
}

// The same of a gRPC caller that opens a Consume and never receives: gRPC's
// flow control stops the gateway's sends once the stream's window is full,
// and the stall ends the stream.
func TestGRPCConsumeOfACallerThatReadsNothingEnds(t *testing.T) {
	a := startApp(t, func(o *app.Options) { o.ConsumeWriteStall = time.Second })
	publishBig(t, a, bigMessages)
	// A fixed window (no growth with the bandwidth), as a slow caller has.
	conn, err := grpc.NewClient(a.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := jetgatev1.NewConsumerServiceClient(conn).Consume(ctx, &jetgatev1.ConsumeRequest{
		Stream: "ORDERS", Consumer: "billing", MaxMessages: 100, Heartbeat: durationpb.New(200 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	leasesComeBack(t, a)
}

const bigMessages = 8 // 8 × 900 KB is more than a socket's buffers and a gRPC window

// publishBig publishes n messages of 900 KB on orders.big, and returns
// its JetStream context.
func publishBig(t *testing.T, a app.Addrs, n int) jetstream.JetStream {
	nc, err := nats.Connect(a.NATS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	data := bytes.Repeat([]byte("z"), 900_000)
	for range n {
		if _, err := js.Publish(t.Context(), "orders.big", data); err != nil {
			t.Fatal(err)
		}
	}
	return js
}

// leasesComeBack fetches every message: the stalled stream's leases come
// back well before ack_wait, with the messages it never took.
func leasesComeBack(t *testing.T, a app.Addrs) {
	const n = bigMessages
	c := newREST(t, a)
	got, returned := 0, 0 // returned: delivered before, to the stalled stream
	for deadline := time.Now().Add(20 * time.Second); got < n && time.Now().Before(deadline); {
		f := c.post(consumerPath+":fetch", `{"batch":1,"expires":"5s"}`)
		if f.status != 200 {
			t.Fatalf("fetch: %d %.200s", f.status, f.raw)
		}
		ms, _ := f.body["messages"].([]any)
		for _, m := range ms {
			msg := obj(t, m, "message")
			if obj(t, msg["metadata"], "metadata")["numDelivered"] != "1" {
				returned++
			}
			got++
			tok, _ := msg["token"].(string)
			noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok}}), "ack")
		}
	}
	if got < n || returned == 0 {
		t.Fatalf("%d of %d messages within 20s, %d of them the stalled Consume's (ack_wait is 30s)", got, n, returned)
	}
}

// A REST Consume caller that reads nothing, its few small messages and
// heartbeats all taken by the kernel's buffers (no write ever waits), is
// told from a working one by its silence: it answered none of the messages
// it holds for the stall, so its stream ends and they come back, long
// before ack_wait, though auto_extend would have kept them an hour.
func TestRESTConsumeOfASilentCallerEndsThoughEveryWriteFits(t *testing.T) {
	a, js, conn := silentConsume(t, func(o *app.Options) { o.ConsumeWriteStall = time.Second }, `{"maxMessages":10,"heartbeat":"0.2s","autoExtend":true}`)
	defer conn.Close()
	cons, err := js.Consumer(t.Context(), "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, "the stream holding the 3 messages", func() bool {
		ci, err := cons.Info(t.Context())
		return err == nil && ci.NumAckPending == 3
	})
	c := newREST(t, a)
	returned := 0
	for deadline := time.Now().Add(20 * time.Second); returned < 3 && time.Now().Before(deadline); {
		f := c.post(consumerPath+":fetch", `{"batch":3,"expires":"2s"}`)
		ms, _ := f.body["messages"].([]any)
		for _, m := range ms {
			msg := obj(t, m, "message")
			if obj(t, msg["metadata"], "metadata")["numDelivered"] == "2" {
				returned++
			}
			tok, _ := msg["token"].(string)
			noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok}}), "ack")
		}
	}
	if returned != 3 {
		t.Fatalf("%d of the silent stream's 3 messages came back within 20s (ack_wait 30s, auto_extend on)", returned)
	}
}

// A REST caller that reads nothing of its Consume stream is silent, and its
// stream ends, though its leases lapse before the silence is up (ack_wait
// 1s, silence 2s): a lease that lapsed unsettled is no sign of the caller,
// and two runs of lapses in a row are the caller gone (lease.Owner).
// Before, the stream's next claim after its leases lapsed counted as the
// caller heard of, and the stream leased its messages again every ack_wait,
// burning a delivery each time for a caller that never read a byte (a
// helper's test: 3 messages delivered 30 times in 10s).
func TestARESTConsumeOfASilentCallerEndsThoughItsLeasesLapse(t *testing.T) {
	_, js, conn := silentConsume(t, func(o *app.Options) { o.ConsumeWriteStall = 2 * time.Second; o.AckWait = time.Second }, `{"maxMessages":10,"heartbeat":"0.2s"}`)
	defer conn.Close()
	// The stream ends, with the reason; the connection's buffers took all it
	// wrote, so the caller reads it all now.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the silent caller's stream did not end within 10s: %v; it sent %d bytes", err, len(body))
	}
	last := body[bytes.LastIndexByte(bytes.TrimSpace(body), '\n')+1:]
	if !bytes.Contains(last, []byte(`"code":4`)) || !bytes.Contains(last, []byte(`"reason":"DEADLINE_EXCEEDED"`)) {
		t.Errorf("the stream ended with %s, want DEADLINE_EXCEEDED", last)
	}
	// Why, in words the caller can act on (a reviewer saw "the deadline
	// passed" alone).
	if !bytes.Contains(last, []byte("the caller")) || bytes.Contains(last, []byte("the deadline passed")) {
		t.Errorf("the stream ended with %s, want the reason in words", last)
	}
	// Each message is delivered 3 times at most: the first, the retry after
	// the first run of lapses, and one claimed as the second run ends the
	// stream. Before, the redeliveries went on every ack_wait, the stream
	// never silent.
	cons, err := js.Consumer(t.Context(), "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := cons.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ci.Delivered.Consumer > 9 {
		t.Errorf("3 messages delivered %d times to a caller that read nothing (ack_wait 1s, silence 2s)", ci.Delivered.Consumer)
	}
}

// silentConsume starts a jetgate with opts, publishes 3 small messages, and
// opens a REST Consume with the request body req whose caller reads nothing.
func silentConsume(t *testing.T, opts func(*app.Options), req string) (app.Addrs, jetstream.JetStream, net.Conn) {
	t.Helper()
	a := startApp(t, opts)
	nc, err := nats.Connect(a.NATS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	for range 3 {
		if _, err := js.Publish(t.Context(), "orders.small", []byte("s")); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := net.Dial("tcp", a.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "POST %s:consume HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		consumerPath, len(req), req); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	return a, js, conn
}
