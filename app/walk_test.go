package app

import (
	"os"
	"testing"
)

// TestWalk is how docs/ARCHITECTURE.md counts the functions one REST Fetch,
// and one REST Ack forwarded to the replica that issued its token, walk
// through: run under coverage three times, it warms both roads up and then
// takes the walk $JETGATE_WALK names (none, fetch, ack) walkTimes times;
// the functions with a block whose count grew by at least walkTimes between
// "none" and a walk are that walk's (scripts/walk diffs the profiles), so
// that background work (a sweep, the roster's heartbeat) that happens to
// run during one walk is not counted. Both replicas run in this process, so
// the forwarded Ack's walk has both sides: the replica the caller reached
// and the issuer.
func TestWalk(t *testing.T) {
	which := os.Getenv("JETGATE_WALK")
	if which == "" {
		t.Skip("JETGATE_WALK names the walk to take (none, fetch, ack): see scripts/walk")
	}
	key := writeKeyFile(t, "0123456789abcdefghijklmnopqrstuvwxyzABCD")
	o := testOptions(t)
	o.TokenKeyFile = key
	a := start(t, o)
	o2 := testOptions(t)
	o2.NATSURL, o2.NATSListen, o2.TokenKeyFile = a.NATS, "", key
	b := start(t, o2)

	_, sc := grpcClients(t, a.GRPC)
	for range 2 + 3*walkTimes {
		publish(t, sc, "orders.walk", "x")
	}
	fetchOne := func(addr string) string {
		var out struct {
			Messages []struct {
				Token string `json:"token"`
			} `json:"messages"`
		}
		restCall(t, addr, "/v1/streams/ORDERS/consumers/billing:fetch", `{"batch":1,"expires":"2s"}`, &out)
		if len(out.Messages) != 1 {
			t.Fatalf("fetch from %s: %d messages; want 1", addr, len(out.Messages))
		}
		return out.Messages[0].Token
	}
	ack := func(addr, token string) {
		var out map[string]any
		restCall(t, addr, "/v1/streams/ORDERS/consumers/billing:ack", `{"tokens":["`+token+`"]}`, &out)
	}
	// Warm both roads up: first calls bind, dial and fill caches.
	ack(b.HTTP, fetchOne(a.HTTP))

	var tokens []string // the tokens the Acks use, fetched before them
	for range walkTimes {
		tokens = append(tokens, fetchOne(a.HTTP))
	}
	for i := range walkTimes {
		switch which {
		case "fetch":
			fetchOne(a.HTTP)
		case "ack":
			ack(b.HTTP, tokens[i])
		}
	}
}

// walkTimes is how many times TestWalk takes its walk (scripts/walk reads
// it from here).
const walkTimes = 5
