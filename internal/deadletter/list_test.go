package deadletter

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
)

// A page reads at most maxListScan messages: letters of another consumer on
// a shared subject are read past one request each, so a page among many of
// them ends short, and the next page goes on from where it stopped, missing
// none of the consumer's own.
func TestAPageAmongOtherConsumersLettersEndsShortAndMissesNone(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	mine := []uint64{e.putLetter(dlqSubject, "orders.1", "a", nil)}
	for range maxListScan + 10 {
		m := &nats.Msg{Subject: dlqSubject, Header: nats.Header{HeaderStream: {"ORDERS"}, HeaderConsumer: {"shipping"}}}
		if _, err := e.js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	<-e.js.PublishAsyncComplete()
	mine = append(mine, e.putLetter(dlqSubject, "orders.2", "b", nil))
	var got []uint64
	var ends []uint64 // where each page stopped
	for next := uint64(1); next != 0; {
		letters, after, err := List(ctx, e.js, billingRoute, next, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range letters {
			got = append(got, l.Seq)
		}
		ends = append(ends, after)
		next = after
	}
	if len(got) != 2 || got[0] != mine[0] || got[1] != mine[1] {
		t.Fatalf("letters %v; want %v", got, mine)
	}
	if len(ends) != 2 || ends[0] != uint64(maxListScan)+1 {
		t.Fatalf("pages stopped at %v; want the first after %d messages read", ends, maxListScan)
	}
}
