package push_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/push"
)

// element is one message of a json batch body, as a receiver reads it.
type element struct {
	ID       string `json:"id"`
	Subject  string `json:"subject"`
	Data     []byte `json:"data"`
	Metadata struct {
		StreamSeq    string `json:"streamSeq"`
		NumDelivered string `json:"numDelivered"`
	} `json:"metadata"`
}

func elements(t *testing.T, p pushed) []element {
	t.Helper()
	var els []element
	if err := json.Unmarshal(p.body, &els); err != nil {
		t.Fatalf("the body is not a JSON array of messages: %v: %q", err, p.body)
	}
	return els
}

// batched is a push block with a batch.
func batched(url string, b push.Batch) push.Config {
	return push.Config{URL: url, Batch: &b, RetryMin: 100 * time.Millisecond, RetryMax: time.Second}
}

var batchID = regexp.MustCompile(`^ORDERS\.1-10\.[0-9a-f]{16}$`)

// Ten messages go in one request: a JSON array of each in the json form
// with its Webhook-Id as "id", signed once over the whole body.
func TestABatchIsOneSignedRequestOfTheJSONForm(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	pc := batched(rc.URL, push.Batch{MaxMessages: 10, MaxWait: 10 * time.Second})
	pc.SigningSecretFile = writeFile(t, secret)
	e.replica(consumerCfg(), pc)
	for i := range 10 {
		e.publish("orders.new", fmt.Sprint(i), nats.Header{"X-Tag": {"a"}})
	}
	p := rc.next(t, 10*time.Second)
	for k, want := range map[string]string{"Content-Type": "application/json", "Jetgate-Batch-Size": "10", "Jetgate-Stream": stream, "Jetgate-Consumer": name} {
		if got := p.header.Get(k); got != want {
			t.Errorf("%s %q, want %q", k, got, want)
		}
	}
	if id := p.header.Get("Webhook-Id"); !batchID.MatchString(id) {
		t.Errorf("Webhook-Id %q; want ORDERS.<first>-<last>.<hash>", id)
	}
	els := elements(t, p)
	if len(els) != 10 {
		t.Fatalf("%d messages in the batch, want 10", len(els))
	}
	for i, el := range els {
		if want := fmt.Sprintf("ORDERS.%d", i+1); el.ID != want || string(el.Data) != fmt.Sprint(i) || el.Subject != "orders.new" ||
			el.Metadata.StreamSeq != fmt.Sprint(i+1) || el.Metadata.NumDelivered != "1" {
			t.Errorf("element %d: %+v", i, el)
		}
	}
	var fields []map[string]json.RawMessage
	_ = json.Unmarshal(p.body, &fields)
	for _, k := range []string{"token", "leaseDeadline"} {
		if _, ok := fields[0][k]; ok {
			t.Errorf("an element has %s", k)
		}
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(p.body, p.header); err != nil {
		t.Fatalf("the batch's signature does not verify: %v", err)
	}
	v, err := push.NewVerifier(writeFile(t, secret))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(p.header, p.body, time.Now()); err != nil {
		t.Fatalf("push.Verifier: %v", err)
	}
	if err := v.Verify(p.header, bytes.Replace(p.body, []byte(`"ORDERS.2"`), []byte(`"ORDERS.3"`), 1), time.Now()); err == nil {
		t.Fatal("push.Verifier takes a changed batch")
	}
	e.drained(5 * time.Second)
	rc.none(t, 300*time.Millisecond)
}

// A 2xx acks every message but those its body names as failed: those are
// nak'ed and pushed again as their next delivery.
func TestABatchsFailuresAreNakedAndPushedAgain(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	var failed sync.Map // Webhook-Id of a message the receiver failed
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		var els []element
		if n != 1 || json.Unmarshal(p.body, &els) != nil || len(els) < 4 {
			return
		}
		failed.Store(els[1].ID, true)
		failed.Store(els[3].ID, true)
		fmt.Fprintf(w, `{"failures":[{"id":%q},{"id":%q,"retry_after":"0s"}]}`, els[1].ID, els[3].ID)
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 10 * time.Second }),
		batched(rc.URL, push.Batch{MaxMessages: 5, MaxWait: 200 * time.Millisecond}))
	for i := range 5 {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	first := elements(t, rc.next(t, 10*time.Second))
	if len(first) != 5 {
		t.Fatalf("first batch %d messages, want 5", len(first))
	}
	again := map[string]string{} // Webhook-Id: delivery
	for len(again) < 2 {
		for _, el := range elements(t, rc.next(t, 10*time.Second)) {
			if _, ok := failed.Load(el.ID); !ok {
				t.Fatalf("%s pushed again, though acked", el.ID)
			}
			again[el.ID] = el.Metadata.NumDelivered
		}
	}
	for id, delivered := range again {
		if delivered != "2" {
			t.Errorf("%s pushed again as delivery %s, want 2 (nak'ed)", id, delivered)
		}
	}
	e.drained(5 * time.Second)
	rc.none(t, 300*time.Millisecond)
}

// A batch answer's retry_after lengthens a failed message's wait as a
// single push's Retry-After does, never shortens it below the retry delay:
// an endpoint answering 0 would otherwise spend the message's deliveries at
// once. Capped at retry.max. Seen on the Naks the replica sends.
func TestABatchFailuresRetryAfterOnlyLengthensItsWait(t *testing.T) {
	e := newEnv(t)
	naks := make(chan *nats.Msg, 16)
	sub, err := e.nc.ChanSubscribe("$JS.ACK."+stream+"."+name+".>", naks)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	asked := map[string]string{"0": `"0s"`, "1": `"500ms"`, "2": `"1h"`, "3": `null`}
	rc := newReceiver(t)
	rc.answerWith(func(n int, p pushed, w http.ResponseWriter) {
		var els []element
		if n != 1 || json.Unmarshal(p.body, &els) != nil {
			return
		}
		var fs []string
		for _, el := range els {
			if a, ok := asked[string(el.Data)]; ok { // "ok" taken: a batch all named failed is the endpoint's failure
				fs = append(fs, fmt.Sprintf(`{"id":%q,"retry_after":%s}`, el.ID, a))
			}
		}
		fmt.Fprintf(w, `{"failures":[%s]}`, strings.Join(fs, ","))
	})
	e.replica(consumerCfg(func(c *consumer.Config) { c.AckWait = 10 * time.Second }),
		batched(rc.URL, push.Batch{MaxMessages: 5, MaxWait: 2 * time.Second})) // retry 100ms to 1s
	seqs := map[uint64]string{}
	for _, data := range []string{"0", "1", "2", "3", "ok"} {
		seqs[e.publish("orders.new", data, nil)] = data
	}
	want := map[string]string{"0": "100ms", "1": "500ms", "2": "1s", "3": "100ms"}
	got := map[string]string{}
	for len(got) < len(want) {
		select {
		case m := <-naks:
			md, err := pull.ParseAckSubject(m.Subject)
			if err != nil || !strings.HasPrefix(string(m.Data), "-NAK") {
				continue
			}
			var d struct {
				Delay time.Duration `json:"delay"`
			}
			if b := bytes.TrimSpace(bytes.TrimPrefix(m.Data, []byte("-NAK"))); len(b) > 0 { // none: at once
				if err := json.Unmarshal(b, &d); err != nil {
					t.Fatalf("the Nak %q: %v", m.Data, err)
				}
			}
			got[seqs[md.StreamSeq]] = d.Delay.String()
		case <-time.After(10 * time.Second):
			t.Fatalf("Naks seen: %v; want one of each of %v", got, want)
		}
	}
	for data, w := range want {
		if got[data] != w {
			t.Errorf("retry_after %s: nak'ed with a delay of %s, want %s", asked[data], got[data], w)
		}
	}
	e.drained(10 * time.Second)
}

// A 5xx fails every message of the batch: with nothing else pushed, the
// same batch is pushed again in place (the same Webhook-Id, no delivery
// spent), and acked.
func TestA5xxFailsEveryMessageOfTheBatch(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	rc.answerWith(func(n int, _ pushed, w http.ResponseWriter) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	e.replica(consumerCfg(), batched(rc.URL, push.Batch{MaxMessages: 4, MaxWait: 10 * time.Second}))
	for i := range 4 {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	first, second := rc.next(t, 10*time.Second), rc.next(t, 10*time.Second)
	a, b := elements(t, first), elements(t, second)
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("batches of %d and %d, want 4 and 4", len(a), len(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID || b[i].Metadata.NumDelivered != "1" {
			t.Fatalf("pushed again: %+v; first: %+v", b[i], a[i])
		}
	}
	if first.header.Get("Webhook-Id") != second.header.Get("Webhook-Id") {
		t.Errorf("the same batch again has another Webhook-Id: %q, %q", first.header.Get("Webhook-Id"), second.header.Get("Webhook-Id"))
	}
	e.drained(5 * time.Second)
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters", len(dl))
	}
	rc.none(t, 300*time.Millisecond)
}

// A batch that does not fill goes once its first message has waited
// max_wait.
func TestMaxWaitFlushesAPartialBatch(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	const wait = 300 * time.Millisecond
	e.replica(consumerCfg(), batched(rc.URL, push.Batch{MaxMessages: 100, MaxWait: wait}))
	start := time.Now()
	for i := range 3 {
		e.publish("orders.new", fmt.Sprint(i), nil)
	}
	p := rc.next(t, 5*time.Second)
	if gap := p.at.Sub(start); gap < wait {
		t.Errorf("pushed %v after the first publish, before max_wait", gap)
	}
	n := len(elements(t, p))
	for n < 3 {
		n += len(elements(t, rc.next(t, 5*time.Second)))
	}
	if n != 3 {
		t.Fatalf("%d messages pushed, want 3", n)
	}
	e.drained(5 * time.Second)
}

// max_bytes splits a backlog into bodies of at most that size; a message
// larger than it goes alone.
func TestMaxBytesSplitsABatch(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	const maxBytes = 4000
	e.replica(consumerCfg(), batched(rc.URL, push.Batch{MaxMessages: 100, MaxBytes: maxBytes, MaxWait: 200 * time.Millisecond}))
	data := strings.Repeat("x", 1000) // about 1,700 bytes an element
	for range 6 {
		e.publish("orders.new", data, nil)
	}
	seen, requests := map[string]bool{}, 0
	for len(seen) < 6 {
		p := rc.next(t, 5*time.Second)
		requests++
		if len(p.body) > maxBytes {
			t.Fatalf("a body of %d bytes, over max_bytes", len(p.body))
		}
		for _, el := range elements(t, p) {
			if seen[el.ID] {
				t.Fatalf("%s pushed twice", el.ID)
			}
			seen[el.ID] = true
		}
	}
	if requests < 3 {
		t.Fatalf("6 messages of ~1,700 bytes in %d requests of at most %d bytes", requests, maxBytes)
	}
	e.publish("orders.new", strings.Repeat("y", 5000), nil)
	p := rc.next(t, 5*time.Second)
	if els := elements(t, p); len(els) != 1 || len(p.body) <= maxBytes {
		t.Fatalf("the large message: %d messages, %d bytes", len(els), len(p.body))
	}
	e.drained(5 * time.Second)
}

// With format cloudevents a batch is a CloudEvents batch: an array of
// structured-mode events, JSON data as JSON and other data in base64.
func TestACloudEventsBatch(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	pc := batched(rc.URL, push.Batch{MaxMessages: 2, MaxWait: 10 * time.Second})
	pc.Format = push.FormatCloudEvents
	e.replica(consumerCfg(), pc)
	e.publish("orders.new", `{"order":1}`, nats.Header{"Content-Type": {"application/json"}, "Ce-Type": {"com.example.order"}, "Ce-Id": {"mine"}})
	e.publish("orders.raw", "\x00\x01", nil)
	p := rc.next(t, 10*time.Second)
	if ct := p.header.Get("Content-Type"); ct != "application/cloudevents-batch+json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var evs []map[string]any
	if err := json.Unmarshal(p.body, &evs); err != nil || len(evs) != 2 {
		t.Fatalf("not an array of two events: %v %q", err, p.body)
	}
	want := []map[string]any{{
		"specversion": "1.0", "id": "ORDERS.1", "source": "/jetgate/streams/ORDERS", "type": "com.example.order",
		"subject": "orders.new", "datacontenttype": "application/json", "data": map[string]any{"order": 1.0},
		"jetgatestream": stream, "jetgateconsumer": name, "jetgatestreamseq": "1", "jetgatedelivered": "1",
	}, {
		"specversion": "1.0", "id": "ORDERS.2", "source": "/jetgate/streams/ORDERS", "type": "io.jetgate.message",
		"subject": "orders.raw", "data_base64": "AAE=",
		"jetgatestream": stream, "jetgateconsumer": name, "jetgatestreamseq": "2", "jetgatedelivered": "1",
	}}
	for i, ev := range evs {
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev["time"])); err != nil {
			t.Errorf("event %d: time %v", i, ev["time"])
		}
		delete(ev, "time")
		if got, _ := json.Marshal(ev); !jsonEqual(got, want[i]) {
			t.Errorf("event %d:\n got %s\nwant %v", i, got, want[i])
		}
	}
	e.drained(5 * time.Second)
}

func jsonEqual(a []byte, b map[string]any) bool {
	bb, _ := json.Marshal(b)
	return string(a) == string(bb) // map keys marshal sorted
}
