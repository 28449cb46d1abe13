package gateway_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/app"
)

// takeTokens reads lines until n messages came, and returns their tokens.
func takeTokens(t *testing.T, lines <-chan map[string]any, n int) []string {
	t.Helper()
	var toks []string
	for deadline := time.Now().Add(15 * time.Second); len(toks) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages within 15s", len(toks), n)
		}
		for _, m := range nextLine(t, lines) {
			tok, _ := obj(t, m, "message")["token"].(string)
			toks = append(toks, tok)
		}
	}
	return toks
}

// endsWithin drains lines (messages and heartbeats) for at most d, and
// reports how long the stream took to end, or false if it did not.
func endsWithin(lines <-chan map[string]any, d time.Duration) (time.Duration, bool, int) {
	start := time.Now()
	msgs := 0
	for until := time.After(d); ; {
		select {
		case v, ok := <-lines:
			if !ok || v["error"] != nil {
				return time.Since(start), true, msgs
			}
			if r, _ := v["result"].(map[string]any); r != nil {
				ms, _ := r["messages"].([]any)
				msgs += len(ms)
			}
		case <-until:
			return d, false, msgs
		}
	}
}

// A REST caller that extended one message by a duration (a long job, as the
// README says), acked it once done, and then went silent while holding
// another is silent from its ack. (The extend's "heard until" stayed after
// the message was settled: the stream lived on until the other lease
// lapsed and a claim holding none reset it; a reviewer's test.)
func TestAnAckedExtendedMessageLeavesNoSilenceBehind(t *testing.T) {
	for _, extend := range []bool{false, true} {
		name := map[bool]string{false: "plain ack", true: "extended then acked"}[extend]
		t.Run(name, func(t *testing.T) {
			a := startApp(t, func(o *app.Options) { o.ConsumeWriteStall = 2 * time.Second; o.AckWait = 10 * time.Second })
			c := newREST(t, a)
			lines := restConsume(t, a, `{"maxMessages":10,"heartbeat":"0.2s"}`)
			c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
			c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
			toks := takeTokens(t, lines, 2)
			if extend {
				noFailures(t, c.post(consumerPath+":extend", map[string]any{"tokens": []string{toks[0]}, "duration": "60s"}), "extend")
			}
			noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{toks[0]}}), "ack")
			// The caller holds toks[1] and says nothing more: silent from
			// now, the stream ends 2s on (its lease lapses only at 9s).
			took, ended, _ := endsWithin(lines, 20*time.Second)
			if !ended || took > 5*time.Second {
				t.Fatalf("the stream of a caller silent since its ack ended after %v (ended: %v); want about the silence, 2s", took.Round(100*time.Millisecond), ended)
			}
		})
	}
}

// The same with traffic enough that the stream always holds a lease (a
// message every 150ms, ack_wait 1s): a caller gone after acking a message
// it had extended by 60s is gone. (It kept its stream for the 60s, each
// message it was handed leased again every ack_wait: 370 deliveries of 66
// messages in 10s; a reviewer's test.)
func TestACallerGoneAfterAnExtendedAckIsGoneOnBusyTraffic(t *testing.T) {
	for _, extend := range []bool{false, true} {
		name := map[bool]string{false: "plain ack", true: "extended then acked"}[extend]
		t.Run(name, func(t *testing.T) {
			a := startApp(t, func(o *app.Options) { o.ConsumeWriteStall = 2 * time.Second; o.AckWait = time.Second })
			c := newREST(t, a)
			js := jetStream(t, a)
			lines := restConsume(t, a, `{"maxMessages":100,"heartbeat":"0.2s"}`)
			c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
			c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
			toks := takeTokens(t, lines, 2)
			ctx, cancel := context.WithCancel(context.Background())
			var published atomic.Int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				tick := time.NewTicker(150 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
						if _, err := js.Publish(ctx, "orders.new", []byte("x")); err == nil {
							published.Add(1)
						}
					}
				}
			}()
			defer func() { cancel(); <-done }()
			if extend {
				noFailures(t, c.post(consumerPath+":extend", map[string]any{"tokens": []string{toks[0]}, "duration": "60s"}), "extend")
			}
			noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{toks[0]}}), "ack")
			took, ended, msgs := endsWithin(lines, 10*time.Second)
			if !ended || took > 6*time.Second {
				t.Fatalf("a caller that settled nothing more after its ack: its stream ended after %v (ended: %v), handed %d messages meanwhile (%d published); want it ended within about the silence (2s) or two runs of lapses (ack_wait 1s)",
					took.Round(100*time.Millisecond), ended, msgs, published.Load())
			}
		})
	}
}

// auto_extend's keep-alives keep a lease from lapsing: a REST caller that
// works on a message for 3 ack_waits (within the silence) and then acks it
// is not cut, and its message is not redelivered meanwhile.
func TestAutoExtendKeepsLeasesFromLapsing(t *testing.T) {
	a := startApp(t, func(o *app.Options) { o.ConsumeWriteStall = 5 * time.Second; o.AckWait = time.Second })
	c := newREST(t, a)
	lines := restConsume(t, a, `{"maxMessages":10,"heartbeat":"0.2s","autoExtend":true}`)
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	toks := takeTokens(t, lines, 2)
	workFor(t, lines, 3*time.Second, "while working on the first for 3 ack_waits, auto_extend on")
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{toks[0]}}), "ack after 3 ack_waits")
	workFor(t, lines, 3*time.Second, "while working on the second for 3 more")
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": []string{toks[1]}}), "ack after 6 ack_waits")
}

// One long job, not two: a REST caller (max_messages 1) works on its
// message for 14s without extending it (ack_wait 10s): its lease lapses once,
// NATS's usual retry, which the README says has the whole silence again.
// The stream, holding none, first takes the replica's orphans: here the
// rest of another caller's Fetch (what did not fit its response: messages
// whose headers are not UTF-8 count four times there), kept for the next
// taker until a second before its lease ends. Claimed with some 2.5s left,
// it lapses while the caller is still on its first job: held for less than
// half its wait, that is no second run of lapses. (It was, and the stream
// ended 11.5s in; a reviewer's test.)
func TestOneLongJobIsOneRunOfLapses(t *testing.T) {
	a := startApp(t, func(o *app.Options) { o.ConsumeWriteStall = 30 * time.Second; o.AckWait = 10 * time.Second })
	c := newREST(t, a)
	lines := restConsume(t, a, `{"maxMessages":1,"heartbeat":"0.2s"}`)
	c.post(publishPath, `{"subject":"orders.new","data":"aGk="}`).ok(t)
	takeTokens(t, lines, 1)
	start := time.Now()
	workFor(t, lines, 2500*time.Millisecond, "early in the job")
	nc, err := nats.Connect(a.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for range 50 {
		m := nats.NewMsg("orders.bin")
		m.Header.Set("Blob", strings.Repeat("\xff", 60_000))
		m.Data = []byte("x")
		if _, err := js.PublishMsg(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	f := c.post(consumerPath+":fetch", `{"batch":50,"expires":"1s"}`)
	if f.status != 200 {
		t.Fatalf("fetch: %d %.200s", f.status, f.raw)
	}
	msgs := list(t, f.body["messages"], "messages")
	if len(msgs) == 0 || len(msgs) == 50 {
		t.Fatalf("the fetch returned %d of 50; want some, the rest kept for the next taker", len(msgs))
	}
	noFailures(t, c.post(consumerPath+":ack", map[string]any{"tokens": tokensOf(t, msgs)}), "the fetcher's ack")
	// The caller is at work on its first message until 14s in.
	for until := time.After(14*time.Second - time.Since(start)); ; {
		select {
		case v, ok := <-lines:
			if !ok || v["error"] != nil {
				t.Fatalf("the stream ended %v into the caller's one job (ack_wait 10s, silence 30s): %v", time.Since(start).Round(100*time.Millisecond), v["error"])
			}
		case <-until:
			return
		}
	}
}
