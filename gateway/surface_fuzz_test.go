package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/app"
)

// FuzzRequestSurface sends Publish (header names, ttl included), Fetch and
// Nak (its delay) with fields of any length and content over REST and gRPC. Whatever they hold, the answer is never a
// server error, and the NATS connection stays up: /readyz still says ready.
func FuzzRequestSurface(f *testing.F) {
	a := startApp(f, func(o *app.Options) { o.MaxExpires = time.Second })
	tr := &http.Transport{}
	f.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	conn, err := grpc.NewClient(a.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = conn.Close() })
	cons, strm := jetgatev1.NewConsumerServiceClient(conn), jetgatev1.NewStreamServiceClient(conn)

	f.Add("ORDERS", "orders.new", []byte("x"), "X-A", "v", "", "billing", int32(1), int64(0), int64(0), int64(0))
	f.Add("ORDERS", "orders."+strings.Repeat("x", 5000), []byte{}, "", "", "", "billing", int32(0), int64(1), int64(1), int64(1))
	f.Add("ORDERS", "orders. x", make([]byte, 1_100_000), "X\r\nY", "a\r\nb", "id\r\n", "bill ing", int32(-1), int64(-1), int64(-1), int64(-1))
	f.Add("$SYS", "$JS.API.STREAM.DELETE.ORDERS", []byte{0}, "Nats-Msg-Id", "x", strings.Repeat("i", 70000), strings.Repeat("c", 300), int32(1<<30), int64(1<<62), int64(7500000000), int64(292*365*24*3600))
	f.Add(strings.Repeat("S", 4000), "orders.\x00\x7f", []byte("\xff"), "Nats-Expected-Last-Sequence", "1", "\x00", "billing:fetch", int32(1000), int64(1), int64(315576000000), int64(86400))
	f.Add("ORDERS", "orders.h", []byte("h"), "X/(A)@=,;?{}[]\\<>\"", "v", "", "billing", int32(1), int64(0), int64(1<<40), int64(86401))

	f.Fuzz(func(t *testing.T, stream, subject string, data []byte, hk, hv, msgID, consumer string, batch int32, maxBytes, ttl, delay int64) {
		pub := &jetgatev1.PublishRequest{Stream: stream, Subject: subject, Data: data, MsgId: msgID}
		if ttl != 0 {
			pub.Ttl = &durationpb.Duration{Seconds: ttl}
		}
		if hk != "" {
			pub.Headers = map[string]*jetgatev1.HeaderValues{hk: {Values: []string{hv}}}
		}
		fr := &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: batch, Expires: durationpb.New(0)}
		if maxBytes != 0 {
			fr.MaxBytes = &maxBytes
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// gRPC: a string that is not UTF-8 does not leave the client.
		if _, err := strm.Publish(ctx, pub); serverFault(err) {
			t.Fatalf("gRPC Publish: %v", err)
		}
		tokens := []string{"t"}
		if resp, err := cons.Fetch(ctx, fr); serverFault(err) {
			t.Fatalf("gRPC Fetch: %v", err)
		} else if len(resp.GetMessages()) > 0 {
			tokens = []string{resp.GetMessages()[0].GetToken()}
		}
		nak := &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: tokens, Delay: &durationpb.Duration{Seconds: delay}}
		if _, err := cons.Nak(ctx, nak); serverFault(err) {
			t.Fatalf("gRPC Nak: %v", err)
		}
		// REST: the same fields as JSON (encoding/json makes the strings
		// valid UTF-8), to paths that may not parse.
		body, _ := json.Marshal(map[string]any{"subject": subject, "data": data, "msgId": msgID, "headers": map[string]any{hk: map[string]any{"values": []string{hv}}},
			"ttl": strconv.FormatInt(ttl, 10) + "s"})
		restNoFault(t, hc, "http://"+a.HTTP+"/v1/streams/"+stream+":publish", body)
		body, _ = json.Marshal(map[string]any{"batch": batch, "expires": "0s", "maxBytes": maxBytes})
		restNoFault(t, hc, "http://"+a.HTTP+"/v1/streams/"+stream+"/consumers/"+consumer+":fetch", body)
		body, _ = json.Marshal(map[string]any{"tokens": tokens, "delay": strconv.FormatInt(delay, 10) + "s"})
		restNoFault(t, hc, "http://"+a.HTTP+"/v1/streams/"+stream+"/consumers/"+consumer+":nak", body)

		resp, err := hc.Get("http://" + a.HTTP + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/readyz %d after Publish %.100q / Fetch %.100q: the NATS connection is down", resp.StatusCode, subject, consumer)
		}
	})
}

// serverFault reports an error that says the gateway, not the request, is
// at fault.
func serverFault(err error) bool {
	switch status.Code(err) {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.DataLoss:
		return !strings.Contains(err.Error(), "grpc: error while marshaling")
	}
	return false
}

func restNoFault(t *testing.T, hc *http.Client, url string, body []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return // a path no HTTP request can carry
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		t.Fatalf("POST %.200s: %d %.300s", url, resp.StatusCode, raw)
	}
}
