package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// REST reads a colon in a consumer's path as a method on it
// (…/consumers/team-a-x:seek): a consumer team-a-x:seek, created over REST
// or gRPC, could then be neither read, updated nor deleted over REST (405,
// "takes POST"), escaped or not. A name made through the API holds no
// colon: refused INVALID_ARGUMENT over both, saying why.
func TestAConsumerNameRESTCannotAddressIsRefused(t *testing.T) {
	p := teamAGateway(t, `{streams: [ORDERS], consumers: ["team-*"]}`)
	conn, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	cc := jetgatev1.NewConsumerServiceClient(conn)
	for _, name := range []string{"team-a-x:seek", "team-a-y:delete", "team-a-z:"} {
		code, body := restJSON(t, p, "team-a-key", "POST", "/v1/streams/ORDERS/consumers", fmt.Sprintf(`{"config": {"durableName": %q}}`, name))
		if msg, _ := body["message"].(string); code != http.StatusBadRequest || !strings.Contains(msg, "colon") {
			t.Errorf("REST create %q: %d %v; want 400 saying a name holds no colon", name, code, body)
			restJSON(t, p, "team-a-key", "DELETE", "/v1/streams/ORDERS/consumers/"+name, "")
		}
		ctx, cancel := context.WithTimeout(withBearer("team-a-key"), 8*time.Second)
		_, err := cc.CreateConsumer(ctx, &jetgatev1.CreateConsumerRequest{Stream: "ORDERS", Config: &jetgatev1.ConsumerConfig{DurableName: name}})
		cancel()
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "colon") {
			t.Errorf("gRPC create %q: %v; want INVALID_ARGUMENT saying a name holds no colon", name, err)
		}
	}
}
