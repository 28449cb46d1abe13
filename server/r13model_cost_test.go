package server_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// apiCount counts the JetStream API requests the server receives for the
// operated consumer, by kind (CONSUMER.INFO, CONSUMER.MSG.NEXT, …).
type apiCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *operated) countAPI(t *testing.T) *apiCount {
	t.Helper()
	c := &apiCount{n: map[string]int{}}
	sub, err := o.nc.Subscribe("$JS.API.>", func(m *nats.Msg) {
		kind := strings.TrimSuffix(strings.TrimPrefix(m.Subject, "$JS.API."), "."+stream+"."+o.name)
		c.mu.Lock()
		c.n[kind]++
		c.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return c
}

// take returns the counts so far and starts again from none.
func (c *apiCount) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// A busy consumer costs no info request per pull (DESIGN 13), of the
// prioritized policy too: past max_waiting deliveries, a pull of priority 0
// waits behind pulls of priority 0 alone, served in turn, and its marks
// tell a replay as a plain consumer's do. Before, every pull of a
// prioritized consumer that could wait asked the consumer's info first:
// 60 infos for 60 Fetches of 10, and as many for a Consume stream's pulls,
// for as long as the traffic lasted.
func TestABusyPrioritizedConsumerAsksNoInfoPerPull(t *testing.T) {
	o := newOperated(t, jetstream.ConsumerConfig{Durable: "ranked", PriorityGroups: []string{"main"},
		PriorityPolicy: jetstream.PriorityPolicyPrioritized, MaxWaiting: 16}, 1)
	o.publish(400)
	c := o.replicas[0]
	ack := func(msgs []*jetgatev1.Message) {
		t.Helper()
		if _, err := c.Ack(o.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: o.name, Tokens: tokens(msgs)}); err != nil {
			t.Fatal(err)
		}
	}
	fetchN := func(n int) (fetches int) {
		for got := 0; got < n; fetches++ {
			r, err := o.fetch(t, c, &jetgatev1.FetchRequest{Batch: 10, Expires: durationpb.New(2 * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			got += len(r.GetMessages())
			ack(r.GetMessages())
		}
		return fetches
	}
	fetchN(100) // past max_waiting: the marks tell a replay to a pull of priority 0
	cnt := o.countAPI(t)
	fetches := fetchN(200)
	n := cnt.take()
	t.Logf("%d Fetches: %v", fetches, n)
	if n["CONSUMER.INFO"] > 1 {
		t.Errorf("%d Fetches of a busy prioritized consumer asked %d infos, want at most 1", fetches, n["CONSUMER.INFO"])
	}

	st, err := c.Consume(o.ctx(), &jetgatev1.ConsumeRequest{Stream: stream, Consumer: o.name, MaxMessages: 10, Heartbeat: durationpb.New(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	resps := 0
	for got := 0; got < 100; resps++ {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got += len(r.GetMessages())
		if len(r.GetMessages()) > 0 {
			ack(r.GetMessages())
		}
	}
	n = cnt.take()
	t.Logf("a Consume stream's %d responses: %v", resps, n)
	if n["CONSUMER.INFO"] > 1 {
		t.Errorf("a Consume stream of a busy prioritized consumer asked %d infos for %d pulls, want at most 1", n["CONSUMER.INFO"], n["CONSUMER.MSG.NEXT"])
	}
}
