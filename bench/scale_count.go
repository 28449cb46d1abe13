package bench

import (
	"maps"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// requestCounter counts what the NATS server hears on the subjects of
// requests: the JetStream API ($JS.API.>), KV puts ($KV.>) and settles
// ($JS.ACK.>), by kind. It sees every client's, the bench's own included:
// the scale measurement sends none of those while it counts, save the busy
// window's Fetches and Acks, which go through jetgate.
type requestCounter struct {
	subs []*nats.Subscription
	mu   sync.Mutex
	n    map[string]int
}

// countedSubjects are the subjects the counter listens on.
var countedSubjects = []string{"$JS.API.>", "$KV.>", "$JS.ACK.>"}

func countRequests(nc *nats.Conn) (*requestCounter, error) {
	c := &requestCounter{n: make(map[string]int)}
	for _, subj := range countedSubjects {
		sub, err := nc.Subscribe(subj, func(m *nats.Msg) { c.add(requestKind(m.Subject)) })
		if err != nil {
			c.stop()
			return nil, err
		}
		// A window of many consumers' requests must not be cut short by
		// the client's default pending limits.
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			c.stop()
			return nil, err
		}
		c.subs = append(c.subs, sub)
	}
	return c, nc.Flush()
}

func (c *requestCounter) add(kind string) {
	c.mu.Lock()
	c.n[kind]++
	c.mu.Unlock()
}

// snapshot is the count of each kind so far.
func (c *requestCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

func (c *requestCounter) stop() {
	for _, s := range c.subs {
		_ = s.Unsubscribe()
	}
}

// requestKind names what a subject asks: the API call without the stream
// and consumer ($JS.API.CONSUMER.INFO.ORDERS.c1: CONSUMER.INFO), a KV put
// with its bucket (KV.PUT jetgate_replicas), a direct get with its stream,
// or ACK.
func requestKind(subject string) string {
	switch {
	case strings.HasPrefix(subject, "$KV."):
		bucket, _, _ := strings.Cut(strings.TrimPrefix(subject, "$KV."), ".")
		return "KV.PUT " + bucket
	case strings.HasPrefix(subject, "$JS.ACK."):
		return "ACK"
	}
	t := strings.Split(strings.TrimPrefix(subject, "$JS.API."), ".")
	switch {
	case len(t) >= 3 && t[0] == "DIRECT" && t[1] == "GET":
		return "DIRECT.GET " + t[2]
	case len(t) >= 3 && (t[0] == "CONSUMER" || t[0] == "STREAM") && twoWordVerb[t[1]]:
		return strings.Join(t[:3], ".")
	case len(t) >= 2 && (t[0] == "CONSUMER" || t[0] == "STREAM"):
		return t[0] + "." + t[1]
	}
	return t[0]
}

// twoWordVerb are the API verbs of two words: CONSUMER.MSG.NEXT,
// CONSUMER.DURABLE.CREATE, STREAM.MSG.GET, STREAM.LEADER.STEPDOWN and the
// like.
var twoWordVerb = map[string]bool{"MSG": true, "DURABLE": true, "LEADER": true, "PEER": true}
