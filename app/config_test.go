package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/config"
)

const exampleConfig = "../examples/two-consumers.yaml"

// fileOptions runs the configuration file with the test's flags over it:
// random ports, a fresh store, and an embedded listener on a random port so
// that the test can look at the server.
func fileOptions(t *testing.T, file string) Options {
	t.Helper()
	o := testOptions(t)
	o.ConfigFile = file
	o.Given = map[string]bool{"grpc-addr": true, "http-addr": true, "data-dir": true, "nats-listen": true}
	return o
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jetgate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// restCall posts body as JSON to the REST gateway and decodes the answer
// into out, failing the test on anything but 200.
func restCall(t *testing.T, addr, path, body string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s %s", path, resp.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, b)
	}
}

// The example file under version control runs as it is: two consumers on
// two streams and a dead-letter stream, all created at start, each consumer
// with its own retry policy; Publish, Fetch and Ack work on both, over gRPC
// and over REST.
func TestExampleConfigServesTwoConsumers(t *testing.T) {
	p := start(t, fileOptions(t, exampleConfig))
	nc, err := nats.Connect(p.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for name, subjects := range map[string][]string{"ORDERS": {"orders.>"}, "PAYMENTS": {"payments.>"}, "DEAD_LETTERS": {"dead.>"}} {
		s, err := js.Stream(ctxT(t), name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		if got := s.CachedInfo().Config.Subjects; !reflect.DeepEqual(got, subjects) {
			t.Errorf("stream %s subjects %v; want %v", name, got, subjects)
		}
	}
	billing := consumerInfo(t, p.NATS, "ORDERS", "billing").Config
	if billing.MaxDeliver != 5 || !reflect.DeepEqual(billing.BackOff, []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute}) ||
		billing.AckWait != 30*time.Second { // the server takes the first backoff step as ack_wait
		t.Errorf("billing: max_deliver %d, backoff %v, ack_wait %v", billing.MaxDeliver, billing.BackOff, billing.AckWait)
	}
	ledger := consumerInfo(t, p.NATS, "PAYMENTS", "ledger").Config
	if ledger.MaxDeliver != 3 || ledger.AckWait != time.Minute || ledger.MaxAckPending != 1024 ||
		!reflect.DeepEqual(ledger.FilterSubjects, []string{"payments.card.>", "payments.bank.>"}) {
		t.Errorf("ledger: max_deliver %d, ack_wait %v, max_ack_pending %d, filters %v", ledger.MaxDeliver, ledger.AckWait, ledger.MaxAckPending, ledger.FilterSubjects)
	}

	cc, sc := grpcClients(t, p.GRPC)
	for _, k := range []struct{ stream, consumer, subject string }{
		{"ORDERS", "billing", "orders.new"},
		{"PAYMENTS", "ledger", "payments.card.1"},
	} {
		t.Run("gRPC "+k.consumer, func(t *testing.T) {
			pub, err := sc.Publish(ctxT(t), &jetgatev1.PublishRequest{Stream: k.stream, Subject: k.subject, Data: []byte("over gRPC")})
			if err != nil {
				t.Fatal(err)
			}
			f, err := cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: k.stream, Consumer: k.consumer, Batch: 10, Expires: durationpb.New(2 * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			msgs := f.GetMessages()
			if len(msgs) != 1 || msgs[0].GetMetadata().GetStreamSeq() != pub.GetSeq() || string(msgs[0].GetData()) != "over gRPC" {
				t.Fatalf("fetched %v; want the message published (seq %d)", msgs, pub.GetSeq())
			}
			ack, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: k.stream, Consumer: k.consumer, Tokens: []string{msgs[0].GetToken()}})
			if err != nil || len(ack.GetFailures()) != 0 {
				t.Fatalf("ack: %v %v", ack.GetFailures(), err)
			}
			if ci := consumerInfo(t, p.NATS, k.stream, k.consumer); ci.NumAckPending != 0 || ci.AckFloor.Stream != pub.GetSeq() {
				t.Errorf("after the ack: num_ack_pending %d, ack floor %d; want 0 and %d", ci.NumAckPending, ci.AckFloor.Stream, pub.GetSeq())
			}
		})
		t.Run("REST "+k.consumer, func(t *testing.T) {
			var pub struct {
				Seq string `json:"seq"`
			}
			restCall(t, p.HTTP, "/v1/streams/"+k.stream+":publish", `{"subject":"`+k.subject+`","data":"b3ZlciBSRVNU"}`, &pub)
			var f struct {
				Messages []struct {
					Token    string `json:"token"`
					Data     []byte `json:"data"`
					Metadata struct {
						StreamSeq string `json:"streamSeq"`
					} `json:"metadata"`
				} `json:"messages"`
			}
			restCall(t, p.HTTP, "/v1/streams/"+k.stream+"/consumers/"+k.consumer+":fetch", `{"batch":10,"expires":"2s"}`, &f)
			if len(f.Messages) != 1 || f.Messages[0].Metadata.StreamSeq != pub.Seq || string(f.Messages[0].Data) != "over REST" {
				t.Fatalf("fetched %+v; want the message published (seq %s)", f.Messages, pub.Seq)
			}
			var ack struct {
				Failures []any `json:"failures"`
			}
			restCall(t, p.HTTP, "/v1/streams/"+k.stream+"/consumers/"+k.consumer+":ack", `{"tokens":["`+f.Messages[0].Token+`"]}`, &ack)
			if len(ack.Failures) != 0 {
				t.Fatalf("ack failures %v", ack.Failures)
			}
			if ci := consumerInfo(t, p.NATS, k.stream, k.consumer); ci.NumAckPending != 0 || ci.NumPending != 0 {
				t.Errorf("after the ack: num_ack_pending %d, num_pending %d; want 0 and 0", ci.NumAckPending, ci.NumPending)
			}
		})
	}
}

// A consumer whose stream is neither configured nor on the server stops
// start-up with an error naming the stream, the field and its line.
func TestConfigConsumerOnAMissingStreamNamesIt(t *testing.T) {
	file := writeConfig(t, `streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers:
  - {stream: ORDERS, name: billing}
  - {stream: PAYMENTS, name: ledger}
`)
	err := runErr(t, fileOptions(t, file))
	var e *config.Error
	if !errors.As(err, &e) || e.Path != "consumers[1].stream" || e.Line != 4 || !strings.Contains(e.Msg, `stream "PAYMENTS" of consumer "ledger" does not exist on the server`) {
		t.Fatalf("error %v; want consumers[1].stream on line 4 naming PAYMENTS", err)
	}
	if !strings.HasPrefix(err.Error(), file+":4: consumers[1].stream: ") {
		t.Errorf("error %q does not start with the file and line", err)
	}
}

// A stream that exists on the server needs no entry in streams; nor does a
// dead-letter subject that a stream on the server binds. One that no stream
// binds stops start-up.
func TestConfigUsesStreamsOnTheServer(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	o.DataDir, o.Stream, o.StreamSubjects, o.Consumer = dir, "PAYMENTS", []string{"payments.>", "dlq.>"}, "seed"
	if err := start(t, o).Stop(); err != nil {
		t.Fatal(err)
	}
	file := writeConfig(t, `consumers:
  - stream: PAYMENTS
    name: ledger
    dead_letter: {subject: dlq.ledger}
`)
	o = fileOptions(t, file)
	o.DataDir = dir
	err := runErr(t, o)
	if err == nil || !strings.Contains(err.Error(), `consumers[0].dead_letter.subject: "dlq.ledger" is a subject of stream "PAYMENTS", the consumer's own`) {
		t.Fatalf("error %v; want the dead-letter subject refused", err)
	}

	o.DataDir = t.TempDir()
	file = writeConfig(t, `streams: [{name: PAYMENTS, subjects: ["payments.>"]}]
consumers:
  - stream: PAYMENTS
    name: ledger
    dead_letter: {subject: nowhere.ledger}
`)
	o.ConfigFile = file
	err = runErr(t, o)
	if err == nil || !strings.HasPrefix(err.Error(), file+`:5: consumers[0].dead_letter.subject: no stream has subject "nowhere.ledger"`) {
		t.Fatalf("error %v; want the unbound dead-letter subject named", err)
	}

	// Bound by a stream that exists on the server (made by an earlier run).
	o.DataDir = dir
	o.ConfigFile = writeConfig(t, `streams: [{name: DLQ, subjects: ["dead.>"]}]
consumers:
  - stream: PAYMENTS
    name: ledger
    dead_letter: {subject: dead.ledger}
  - stream: PAYMENTS
    name: audit
`)
	p := start(t, o)
	if ci := consumerInfo(t, p.NATS, "PAYMENTS", "audit"); ci.Config.Durable != "audit" {
		t.Errorf("consumer audit: %+v", ci.Config)
	}
}

// tokens.key_files are read as one key file: the first plain line signs,
// every line of every file verifies. A token signed with key A by one
// process is settled by another that has B to sign and A, verify-only, in a
// second file.
func TestTokenKeyFilesAreMerged(t *testing.T) {
	dir := t.TempDir()
	keyA := strings.Repeat("a", 40)
	fileA := writeKeyFile(t, keyA)
	fileB := writeKeyFile(t, strings.Repeat("b", 40))
	fileAVerify := writeKeyFile(t, "verify-only:"+keyA)

	conf := func(files ...string) string {
		return writeConfig(t, "tokens: {key_files: ["+strings.Join(files, ", ")+"]}\nstreams: [{name: ORDERS, subjects: [orders.>]}]\nconsumers: [{stream: ORDERS, name: billing}]\n")
	}
	o := fileOptions(t, conf(fileA))
	o.DataDir = dir
	p1 := start(t, o)
	cc, sc := grpcClients(t, p1.GRPC)
	publish(t, sc, "orders.new", "one")
	msgs := fetch(t, cc, "billing", 1, time.Second)
	if len(msgs) != 1 {
		t.Fatalf("fetched %d messages; want 1", len(msgs))
	}
	if err := p1.Stop(); err != nil {
		t.Fatal(err)
	}

	o = fileOptions(t, conf(fileB, fileAVerify))
	o.DataDir = dir
	p2 := start(t, o)
	cc, _ = grpcClients(t, p2.GRPC)
	ack, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[0].GetToken()}})
	if err != nil || len(ack.GetFailures()) != 0 {
		t.Fatalf("ack of a key-A token with files [B, verify-only A]: %v %v", ack.GetFailures(), err)
	}

	// A file of verify-only keys alone cannot sign.
	err = runErr(t, fileOptions(t, conf(fileAVerify)))
	if err == nil || !strings.Contains(err.Error(), "tokens.key_files: ") || !strings.Contains(err.Error(), "one must sign") {
		t.Errorf("error %v; want tokens.key_files refused for want of a signing key", err)
	}
}

// Without embedded.listen the embedded server takes no network clients:
// jetgate reaches it in-process and serves as ever.
func TestEmbeddedWithoutListenerIsInProcessOnly(t *testing.T) {
	o := fileOptions(t, writeConfig(t, "streams: [{name: ORDERS, subjects: [orders.>]}]\nconsumers: [{stream: ORDERS, name: billing}]\n"))
	delete(o.Given, "nats-listen")
	p := start(t, o)
	if p.NATS != "" {
		t.Errorf("NATS address %q; want none", p.NATS)
	}
	cc, sc := grpcClients(t, p.GRPC)
	seq := publish(t, sc, "orders.new", "in-process")
	if msgs := fetch(t, cc, "billing", 1, time.Second); len(msgs) != 1 || msgs[0].GetMetadata().GetStreamSeq() != seq {
		t.Fatalf("fetched %v; want seq %d", msgs, seq)
	}
}

// A flag given explicitly wins over the file, and one that is not given
// does not: the file says 127.0.0.1:9090, the test's random port is used;
// the file's consumer keeps the file's ack_wait although the flag default
// differs.
func TestFlagsOverrideTheFileAtStart(t *testing.T) {
	o := fileOptions(t, writeConfig(t, "listen: {grpc: \"127.0.0.1:9090\", http: \"127.0.0.1:8080\"}\nlimits: {max_batch: 5}\n"+
		"streams: [{name: ORDERS, subjects: [orders.>]}]\nconsumers: [{stream: ORDERS, name: billing, ack_wait: 7s}]\n"))
	o.MaxBatch, o.AckWait = 3, time.Hour
	o.Given["max-batch"] = true
	p := start(t, o)
	if strings.HasSuffix(p.GRPC, ":9090") || strings.HasSuffix(p.HTTP, ":8080") {
		t.Errorf("listening on %s and %s; want the flags' random ports", p.GRPC, p.HTTP)
	}
	if c := consumerInfo(t, p.NATS, "ORDERS", "billing").Config; c.AckWait != 7*time.Second {
		t.Errorf("ack_wait %v; want the file's 7s", c.AckWait)
	}
	cc, _ := grpcClients(t, p.GRPC)
	_, err := cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 4, Expires: durationpb.New(0)})
	if err == nil || !strings.Contains(err.Error(), "batch") {
		t.Errorf("Fetch of 4 with --max-batch 3 over the file's 5: %v; want it refused", err)
	}
	if _, err := cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing", Batch: 3, Expires: durationpb.New(0)}); err != nil {
		t.Errorf("Fetch of 3: %v", err)
	}
}

// The file names a consumer's priority groups and pause like any field, and
// bootstrap sends them.
func TestConfigSendsPriorityGroupsAndPause(t *testing.T) {
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	file := writeConfig(t, fmt.Sprintf(`
streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers:
  - stream: ORDERS
    name: pinned
    priority_groups: [main]
    priority_policy: pinned_client
    priority_timeout: 2m
    pause_until: %s
`, until.Format(time.RFC3339)))
	p := start(t, fileOptions(t, file))
	ci := consumerInfo(t, p.NATS, "ORDERS", "pinned")
	c := ci.Config
	if !reflect.DeepEqual(c.PriorityGroups, []string{"main"}) || c.PriorityPolicy != jetstream.PriorityPolicyPinned || c.PinnedTTL != 2*time.Minute {
		t.Errorf("priority groups %v, policy %v, timeout %v", c.PriorityGroups, c.PriorityPolicy, c.PinnedTTL)
	}
	if c.PauseUntil == nil || !c.PauseUntil.Equal(until) || !ci.Paused {
		t.Errorf("pause_until %v, paused %v; want %v", c.PauseUntil, ci.Paused, until)
	}
}
