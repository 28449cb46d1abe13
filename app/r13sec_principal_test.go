package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/authtest"
)

// A principal jetgate cannot carry through a settle (over 1,024 bytes: a
// JWT's sub, a certificate's URI SAN) is refused at the door, on gRPC and
// REST alike. Before, it fetched, and every settle of what it fetched was
// refused INVALID_ARGUMENT "principal too long": its messages came back
// after each ack_wait, a delivery burnt each time, until max_deliver
// dead-lettered them.
func TestAPrincipalTooLongToSettleIsRefusedAtTheDoor(t *testing.T) {
	long := "spiffe://example.org/" + strings.Repeat("x", 1100)
	idp := authtest.NewIssuer(t, "https://idp.test", "k1")
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers: [{stream: ORDERS, name: billing}]
auth:
  api_keys: [{principal: producer, sha256: %s}]
  jwt: {jwks_file: %q, issuer: "https://idp.test", audience: jetgate}
  grants:
    - {principal: producer, stream: ORDERS, actions: [publish]}
    - {principal: %q, stream: ORDERS, consumers: [billing], actions: [fetch, settle]}
`, authtest.KeyHash("producer-key"), authtest.WriteJWKS(t, idp), long))
	o := fileOptions(t, file)
	o.NATSListen = ""
	o.Given["nats-listen"] = true
	p := start(t, o)
	cc, sc := grpcClients(t, p.GRPC)
	jwt := idp.Token(long, "jetgate", time.Hour)
	for name, c := range map[string]caller{"grpc": grpcCaller{cc}, "rest": restCaller{"http://" + p.HTTP}} {
		ctx, cancel := context.WithTimeout(withBearer("producer-key"), 8*time.Second)
		_, err := sc.Publish(ctx, &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.x", Data: []byte(name)})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		code, reason, toks := c.fetch(t, jwt, "billing")
		if code == codes.OK && len(toks) > 0 {
			acode, failures := c.ack(t, jwt, toks...)
			t.Errorf("%s: a principal of %d bytes fetched %d message(s); its Ack: %v %v", name, len(long), len(toks), acode, failures)
			continue
		}
		if code != codes.Unauthenticated || reason != "UNAUTHENTICATED" {
			t.Errorf("%s: Fetch as a principal of %d bytes: %v %s; want UNAUTHENTICATED", name, len(long), code, reason)
		}
	}
}
