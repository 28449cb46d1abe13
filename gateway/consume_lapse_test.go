package gateway_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/app"
	"github.com/jetgate/jetgate/internal/natstest"
)

// A REST Consume caller that reads its stream but lets leases lapse, and so
// is not silent: each test's stream has a 2s silence (lease.Owner).

// lapseApp is a jetgate whose REST Consume streams end after 2s of silence,
// with ack_wait wait, and a stream of it whose caller reads every line.
func lapseApp(t *testing.T, wait time.Duration) (app.Addrs, *rest, <-chan map[string]any) {
	a := startApp(t, func(o *app.Options) { o.ConsumeWriteStall = 2 * time.Second; o.AckWait = wait })
	return a, newREST(t, a), restConsume(t, a, `{"maxMessages":10,"heartbeat":"0.2s"}`)
}

// deliverOnce sets the consumer's max_deliver to 1, as an operator would,
// and returns it.
func deliverOnce(t *testing.T, a app.Addrs) jetstream.Consumer {
	t.Helper()
	js := jetStream(t, a)
	cons, err := js.Consumer(t.Context(), "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	cfg := cons.CachedInfo().Config
	cfg.MaxDeliver = 1
	if _, err := js.UpdateConsumer(t.Context(), "ORDERS", cfg); err != nil {
		t.Fatal(err)
	}
	return cons
}

// nextMessage reads lines until one brings a message, and returns its
// token; it fails the test if the stream ends first.
func nextMessage(t *testing.T, lines <-chan map[string]any) string {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		if ms := nextLine(t, lines); len(ms) > 0 {
			tok, _ := obj(t, ms[0], "message")["token"].(string)
			return tok
		}
	}
	t.Fatal("no message within 15s")
	return ""
}

// workFor reads the stream's heartbeats for d, the caller at work on what
// it holds meanwhile, and fails the test if the stream ends (or brings a
// message) within d.
func workFor(t *testing.T, lines <-chan map[string]any, d time.Duration, what string) {
	t.Helper()
	for until := time.After(d); ; {
		select {
		case v, ok := <-lines:
			if !ok || v["error"] != nil {
				t.Fatalf("the stream ended %s: %v", what, v["error"])
			}
			if ms := obj(t, v["result"], "result")["messages"].([]any); len(ms) > 0 {
				t.Fatalf("an unexpected message %s: %v", what, ms)
			}
		case <-until:
			return
		}
	}
}

// A REST caller that leaves one message unsettled (it could not process
// it; max_deliver 1, so it is gone for good once its lease lapses) and then
// has nothing to do for longer than the silence gets its next message with
// the whole silence to settle it. (A first form of the lapse rule resumed
// the silence run up before: the stream ended some 0.25s after the fresh
// message came, and the message, nak'ed back at max_deliver 1, was lost to
// the consumer; a reviewer's test.)
func TestAFreshMessageAfterALapsedOneGoneForGoodHasTheSilence(t *testing.T) {
	a, c, lines := lapseApp(t, 2*time.Second)
	cons := deliverOnce(t, a)
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	nextMessage(t, lines) // left unsettled: its lease lapses, max_deliver 1
	natstest.Eventually(t, 10*time.Second, "the unsettled message gone from the consumer's pending", func() bool {
		ci, err := cons.Info(t.Context())
		return err == nil && ci.NumAckPending == 0
	})
	workFor(t, lines, 3*time.Second, "while idle")
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	tok := nextMessage(t, lines)
	workFor(t, lines, time.Second, "a second after a fresh message came to an idle stream (silence 2s)")
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok}}), "ack")
}

// A REST caller that leaves a message it failed on to come back at ack_wait
// (NATS's usual retry), then works on the redelivery for half the silence
// and acks it: the retry has the whole silence (a first form of the lapse
// rule gave it 0.25s: the first delivery's lease counted as silence; a
// reviewer's test).
func TestARetriedMessageHasTheSilence(t *testing.T) {
	_, c, lines := lapseApp(t, 2*time.Second)
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	nextMessage(t, lines) // it fails on it: no ack, the server redelivers at ack_wait
	tok := nextMessage(t, lines)
	workFor(t, lines, time.Second, "a second after the redelivery came (silence 2s, ack_wait 2s)")
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{tok}}), "ack")
}

// A REST caller that naks each message as it comes (it cannot take it now)
// is heard of at each Nak: its stream never falls silent. The server
// redelivers a nak'ed message at once, and its redelivery can reach the
// lease table (put) before the Nak's answer does (Finish); a first form of
// the lapse rule took the old lease, still settling, as lapsed with its
// whole deadline left, and the stream ended at once (a reviewer's test).
func TestACallerThatNaksEveryMessageIsNeverSilent(t *testing.T) {
	_, c, lines := lapseApp(t, 10*time.Second)
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	for range 300 { // nextLine fails the test if the stream ends
		for _, m := range nextLine(t, lines) {
			tok, _ := obj(t, m, "message")["token"].(string)
			noFailures(t, c.post(consumerPath+":nak", map[string]any{"tokens": []string{tok}}), "nak")
		}
	}
}

// A REST caller gone for good, its messages coming further apart than the
// silence (each lost at max_deliver 1 once its lease lapses), is gone once
// two have lapsed in a row: its stream ends, and takes no more. (A first
// form forgave a lapse after the stream held none for the silence, and the
// stream took message after message for ever; a reviewer's test.)
func TestACallerGoneForGoodOnSparseTrafficIsGone(t *testing.T) {
	a, c, lines := lapseApp(t, time.Second)
	cons := deliverOnce(t, a)
	ended := func() bool { // drains the heartbeats; true once the stream ended
		for {
			select {
			case v, ok := <-lines:
				if !ok || v["error"] != nil {
					return true
				}
			default:
				return false
			}
		}
	}
	for sent := 1; ; sent++ {
		if sent > 3 {
			t.Fatal("the stream took a third message, two lost before")
		}
		c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
		gone := false
		natstest.Eventually(t, 10*time.Second, "the message lost, or the stream ended", func() bool {
			if ended() {
				gone = true
				return true
			}
			ci, err := cons.Info(t.Context())
			return err == nil && ci.Delivered.Stream == uint64(sent) && ci.NumAckPending == 0
		})
		if gone {
			if sent < 2 {
				t.Fatal("the stream ended after the first lapse: that is NATS's usual retry")
			}
			return
		}
		workFor(t, lines, 2500*time.Millisecond, "idle after a lapse") // longer than the silence
	}
}
