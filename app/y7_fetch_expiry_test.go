package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A Fetch waits no longer than its caller's credential lasts: one that
// waits on an empty consumer past its JWT's expiry (exp with the skew
// allowed) ends UNAUTHENTICATED then, in the words of any call refused for
// its credential, on gRPC and REST alike. Before, it waited its whole
// expires (up to limits.max_expires) and answered OK, and a message that
// came meanwhile was leased to a caller whose credential had lapsed.
func TestAFetchEndsWhenItsJWTExpires(t *testing.T) {
	p, idp, _ := secured(t)
	cc := jetgatev1.NewConsumerServiceClient(grpcConn(t, p.GRPC))
	const expires = 8 * time.Second
	// A JWT still taken for a moment: its exp passed, within the skew.
	shortLived := func() string { return idp.Token("alice", "jetgate", -jwtSkew+2*time.Second) }
	// refusal is what a unary call with jwt, once it has lapsed, is told.
	refusal := func(t *testing.T, jwt string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(withBearer(jwt), 5*time.Second)
		defer cancel()
		_, err := cc.Ack(ctx, &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{"x"}})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("the lapsed JWT is still taken: %v", err)
		}
		return status.Convert(err).Message()
	}
	// unlost publishes a message once the Fetch has ended: the pull it left
	// in the server takes it for the next Fetch (the orphan pool), which
	// leases it at once, not after ack_wait.
	_, sc := grpcClients(t, p.GRPC)
	unlost := func(t *testing.T, data string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(withBearer("billing-key"), 10*time.Second)
		defer cancel()
		if _, err := sc.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.late", Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
		resp, err := cc.Fetch(ctx, &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Expires: durationpb.New(5 * time.Second)})
		if err != nil || len(resp.GetMessages()) != 1 || string(resp.GetMessages()[0].GetData()) != data {
			t.Fatalf("the next Fetch got %v, %v; want %q", resp.GetMessages(), err, data)
		}
		if _, err := cc.Ack(ctx, &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{resp.GetMessages()[0].GetToken()}}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("grpc", func(t *testing.T) {
		jwt := shortLived()
		ctx, cancel := context.WithTimeout(withBearer(jwt), 20*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := cc.Fetch(ctx, &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Expires: durationpb.New(expires)})
		took := time.Since(start)
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("the Fetch answered %v after %v (%d messages, %v); want UNAUTHENTICATED as its JWT lapsed", status.Code(err), took.Round(time.Millisecond), len(resp.GetMessages()), resp.GetEmptyReason())
		}
		if took >= expires-time.Second {
			t.Fatalf("the Fetch ended after %v, at its expires, not as its JWT lapsed", took.Round(time.Millisecond))
		}
		if got, want := status.Convert(err).Message(), refusal(t, jwt); got != want {
			t.Fatalf("the Fetch ended with %q; want the words of a refused call, %q", got, want)
		}
		unlost(t, "after-grpc")
	})

	t.Run("rest", func(t *testing.T) {
		jwt := shortLived()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing:fetch", strings.NewReader(`{"expires":"8s"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+jwt)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the Fetch answered %d after %v: %s; want 401 as its JWT lapsed", resp.StatusCode, took.Round(time.Millisecond), body)
		}
		if took >= expires-time.Second {
			t.Fatalf("the Fetch ended after %v, at its expires, not as its JWT lapsed", took.Round(time.Millisecond))
		}
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("an answer that is not JSON: %s", body)
		}
		if codes.Code(e.Code) != codes.Unauthenticated || e.Message != refusal(t, jwt) {
			t.Fatalf("the Fetch ended with %s; want UNAUTHENTICATED in the words of a refused call", body)
		}
		unlost(t, "after-rest")
	})
}
