package app

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// jwtSkew is the clock skew the gateway allows a JWT's exp.
const jwtSkew = 30 * time.Second

// A JWT's expiry bounds what it opens: a Consume stream opened with it ends
// UNAUTHENTICATED once the JWT has expired, on gRPC and REST alike, and
// hands out nothing published after. Before, the stream ran on for as long
// as its caller kept it (hours), leasing every new message to a caller whose
// credential had expired.
func TestAConsumeStreamEndsWhenItsJWTExpires(t *testing.T) {
	p, idp, _ := secured(t)
	_, sc := grpcClients(t, p.GRPC)
	// expired waits until the gateway refuses jwt on a unary call (an Ack
	// of no lease of anyone's), then publishes one message.
	expired := func(jwt string) {
		t.Helper()
		cc := jetgatev1.NewConsumerServiceClient(grpcConn(t, p.GRPC))
		for deadline := time.Now().Add(10 * time.Second); ; {
			ctx, cancel := context.WithTimeout(withBearer(jwt), 2*time.Second)
			_, err := cc.Ack(ctx, &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{"x"}})
			cancel()
			if status.Code(err) == codes.Unauthenticated {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the JWT is still taken: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // the caller's pace, not a wait for the gateway
		}
		ctx, cancel := context.WithTimeout(withBearer("billing-key"), 8*time.Second)
		defer cancel()
		if _, err := sc.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.late", Data: []byte("late")}); err != nil {
			t.Fatal(err)
		}
	}
	// A JWT that is still taken for a moment: its exp passed, within the skew.
	shortLived := func() string { return idp.Token("alice", "jetgate", -jwtSkew+2*time.Second) }

	t.Run("grpc", func(t *testing.T) {
		jwt := shortLived()
		cc := jetgatev1.NewConsumerServiceClient(grpcConn(t, p.GRPC))
		ctx, cancel := context.WithTimeout(withBearer(jwt), 20*time.Second)
		defer cancel()
		st, err := cc.Consume(ctx, &jetgatev1.ConsumeRequest{Stream: "ORDERS", Consumer: "billing", Heartbeat: durationpb.New(300 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil { // the stream is open: its first heartbeat
			t.Fatalf("the stream did not open: %v", err)
		}
		expired(jwt)
		for {
			resp, err := st.Recv()
			if err != nil {
				if status.Code(err) != codes.Unauthenticated {
					t.Fatalf("the stream ended with %v; want UNAUTHENTICATED", err)
				}
				return
			}
			if len(resp.GetMessages()) > 0 {
				t.Fatalf("a message published once the JWT was refused was leased to its stream: %q", resp.GetMessages()[0].GetData())
			}
		}
	})

	t.Run("rest", func(t *testing.T) {
		jwt := shortLived()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.HTTP+"/v1/streams/ORDERS/consumers/billing:consume", strings.NewReader(`{"heartbeat":"300ms"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+jwt)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the stream did not open: %d", resp.StatusCode)
		}
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(make([]byte, 1<<20), 8<<20)
		if !lines.Scan() {
			t.Fatalf("the stream did not open: %v", lines.Err())
		}
		expired(jwt)
		for lines.Scan() {
			var line struct {
				Result *struct {
					Messages []struct{ Data string } `json:"messages"`
				} `json:"result"`
				Error *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(lines.Bytes(), &line); err != nil {
				t.Fatalf("a line that is not JSON: %s", lines.Bytes())
			}
			switch {
			case line.Error != nil && codes.Code(line.Error.Code) == codes.Unauthenticated:
				return
			case line.Error != nil:
				t.Fatalf("the stream ended with %s; want UNAUTHENTICATED", lines.Bytes())
			case line.Result != nil && len(line.Result.Messages) > 0:
				t.Fatalf("a message published once the JWT was refused was leased to its stream: %s", lines.Bytes())
			}
		}
		t.Fatalf("the stream ended without saying why: %v", lines.Err())
	})
}
