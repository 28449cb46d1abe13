package consumer_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
)

// Past max_waiting the server refuses a pull without heartbeats (409) and
// drops one with heartbeats without a word; either way the Fetch says
// MAX_WAITING rather than fail or call NATS unavailable.
func TestFetchPastMaxWaitingIsEmptyWithAReason(t *testing.T) {
	e := start(t, consumer.Config{AckWait: 30 * time.Second, MaxAckPending: 1024})
	places := e.info().Config.MaxWaiting
	if places <= 0 {
		t.Fatalf("max_waiting %d", places)
	}

	// Another client holds every place.
	e.holdPlaces(places)

	for _, tc := range []struct {
		name    string
		expires time.Duration
	}{
		{"at once, refused with a status", 0},
		{"waiting, dropped without a word", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := e.c.Fetch(ctx, consumer.FetchRequest{Batch: 1, Expires: tc.expires})
			if err != nil || res.Empty != consumer.EmptyMaxWaiting || len(res.Messages) != 0 {
				t.Fatalf("fetch past max_waiting: %v, %d messages, empty reason %v; want no error and EmptyMaxWaiting",
					err, len(res.Messages), res.Empty)
			}
		})
	}
}

// holdPlaces has a client outside jetgate hold n of the consumer's waiting
// places, with pulls that wait a minute, until the end of the test.
func (e *env) holdPlaces(n int) {
	e.t.Helper()
	other := natstest.Connect(e.t, e.ns)
	inbox := other.NewRespInbox()
	if _, err := other.SubscribeSync(inbox); err != nil {
		e.t.Fatal(err)
	}
	body := []byte(`{"batch":1,"expires":` + strconv.FormatInt(int64(time.Minute), 10) + `}`)
	for range n {
		if err := other.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+name, inbox, body); err != nil {
			e.t.Fatal(err)
		}
	}
	natstest.Eventually(e.t, within, "the other client's pulls waiting", func() bool { return e.info().NumWaiting == n })
}
