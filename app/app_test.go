package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/config"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testOptions are the defaults with everything on random ports, an embedded
// NATS server storing in a fresh directory, and a silent logger.
func testOptions(t *testing.T) Options {
	t.Helper()
	o := Defaults()
	o.NATSURL = ""
	o.NATSListen = "127.0.0.1:-1"
	o.GRPCAddr = "127.0.0.1:0"
	o.HTTPAddr = "127.0.0.1:0"
	o.DataDir = t.TempDir()
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return o
}

// start runs a whole jetgate process with o until it serves. It is stopped
// at the end of the test, or earlier with Stop.
func start(t *testing.T, o Options) *Process {
	t.Helper()
	p, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Run did not start: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("Run returned %v after cancel; want nil", err)
		}
	})
	return p
}

// runErr runs jetgate with options that must be refused, and returns Run's
// error. Starting to serve fails the test.
func runErr(t *testing.T, o Options) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o.Started = func(Addrs) {
		t.Error("Run started serving; want it to refuse the options")
		cancel()
	}
	return Run(ctx, o)
}

func grpcClients(t *testing.T, addr string) (jetgatev1.ConsumerServiceClient, jetgatev1.StreamServiceClient) {
	t.Helper()
	conn := grpcConn(t, addr)
	return jetgatev1.NewConsumerServiceClient(conn), jetgatev1.NewStreamServiceClient(conn)
}

// grpcConn is a plaintext connection to the gRPC listener at addr, closed
// at the end of the test.
func grpcConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// consumerInfo reads a consumer's info over a connection of its own.
func consumerInfo(t *testing.T, natsURL, stream, consumer string) *jetstream.ConsumerInfo {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatalf("connect to %s: %v", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		t.Fatalf("consumer %s/%s: %v", stream, consumer, err)
	}
	ci, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func publish(t *testing.T, sc jetgatev1.StreamServiceClient, subject, data string) uint64 {
	t.Helper()
	r, err := sc.Publish(ctxT(t), &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: subject, Data: []byte(data)})
	if err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
	return r.GetSeq()
}

func fetch(t *testing.T, cc jetgatev1.ConsumerServiceClient, consumer string, batch int32, expires time.Duration) []*jetgatev1.Message {
	t.Helper()
	r, err := cc.Fetch(ctxT(t), &jetgatev1.FetchRequest{
		Stream: "ORDERS", Consumer: consumer, Batch: batch, Expires: durationpb.New(expires),
	})
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return r.GetMessages()
}

func TestBootstrapSendsOnlyTheDocumentedFields(t *testing.T) {
	p := start(t, testOptions(t))
	ci := consumerInfo(t, p.NATS, "ORDERS", "billing")

	got := ci.Config
	// Server-owned bookkeeping, not part of what jetgate sends.
	for k := range got.Metadata {
		if !strings.HasPrefix(k, "_nats.") {
			t.Errorf("metadata key %q: jetgate should set no metadata", k)
		}
	}
	got.Metadata = nil
	want := jetstream.ConsumerConfig{
		Name:          "billing",
		Durable:       "billing",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    -1,
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
		MaxWaiting:    512,
		MaxAckPending: 1024,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("consumer config:\n got %+v\nwant %+v", got, want)
	}
	if got.FilterSubject != "" || got.FilterSubjects != nil || got.BackOff != nil {
		t.Errorf("filter %q %v backoff %v; want none", got.FilterSubject, got.FilterSubjects, got.BackOff)
	}
}

func TestEmbeddedCreatesTheDemoStream(t *testing.T) {
	p := start(t, testOptions(t))
	nc, err := nats.Connect(p.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctxT(t), "ORDERS")
	if err != nil {
		t.Fatalf("stream ORDERS: %v", err)
	}
	if subj := s.CachedInfo().Config.Subjects; !reflect.DeepEqual(subj, []string{"orders.>"}) {
		t.Errorf("ORDERS subjects %v; want [orders.>]", subj)
	}
	// The demo shows every feature: a message's own ttl and atomic batches.
	if c := s.CachedInfo().Config; !c.AllowMsgTTL || !c.AllowAtomicPublish {
		t.Errorf("ORDERS allow_msg_ttl %v, allow_atomic %v; want both", c.AllowMsgTTL, c.AllowAtomicPublish)
	}
	_, sc := grpcClients(t, p.GRPC)
	r, err := sc.PublishBatch(ctxT(t), &jetgatev1.PublishBatchRequest{Stream: "ORDERS", Messages: []*jetgatev1.BatchMessage{
		{Subject: "orders.a", Ttl: durationpb.New(time.Hour)}, {Subject: "orders.b"}}})
	if err != nil || len(r.GetSeqs()) != 2 {
		t.Fatalf("a batch on the demo stream: %v %v", r, err)
	}
}

func TestDeliverPolicies(t *testing.T) {
	startTime := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		policy   string
		seq      uint64
		time     string
		filter   []string
		want     jetstream.DeliverPolicy
		wantSeq  uint64
		wantTime *time.Time
	}{
		{policy: "all", want: jetstream.DeliverAllPolicy},
		{policy: "last", want: jetstream.DeliverLastPolicy},
		{policy: "new", want: jetstream.DeliverNewPolicy},
		{policy: "by_start_sequence", seq: 7, want: jetstream.DeliverByStartSequencePolicy, wantSeq: 7},
		{policy: "by_start_time", time: "2026-01-02T15:04:05Z", want: jetstream.DeliverByStartTimePolicy, wantTime: &startTime},
		// The server insists on a filter subject for last_per_subject.
		{policy: "last_per_subject", filter: []string{"orders.>"}, want: jetstream.DeliverLastPerSubjectPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			t.Parallel()
			o := testOptions(t)
			o.DeliverPolicy, o.StartSeq, o.StartTime, o.FilterSubjects = tt.policy, tt.seq, tt.time, tt.filter
			p := start(t, o)
			c := consumerInfo(t, p.NATS, "ORDERS", "billing").Config
			if c.DeliverPolicy != tt.want {
				t.Errorf("deliver policy %v; want %v", c.DeliverPolicy, tt.want)
			}
			if c.OptStartSeq != tt.wantSeq {
				t.Errorf("opt_start_seq %d; want %d", c.OptStartSeq, tt.wantSeq)
			}
			switch {
			case tt.wantTime == nil && c.OptStartTime != nil:
				t.Errorf("opt_start_time %v; want none", c.OptStartTime)
			case tt.wantTime != nil && (c.OptStartTime == nil || !c.OptStartTime.Equal(*tt.wantTime)):
				t.Errorf("opt_start_time %v; want %v", c.OptStartTime, tt.wantTime)
			}
		})
	}
}

func TestDeliverPolicyNewSkipsEarlierMessages(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	o.DataDir = dir
	p1 := start(t, o)
	_, sc := grpcClients(t, p1.GRPC)
	before := publish(t, sc, "orders.before", "old")
	if err := p1.Stop(); err != nil {
		t.Fatal(err)
	}

	o2 := testOptions(t)
	o2.DataDir, o2.Consumer, o2.DeliverPolicy = dir, "newcomer", "new"
	p2 := start(t, o2)
	cc, sc := grpcClients(t, p2.GRPC)
	after := publish(t, sc, "orders.after", "fresh")
	if after <= before {
		t.Fatalf("second publish got seq %d, first %d: the store was not reused", after, before)
	}
	msgs := fetch(t, cc, "newcomer", 10, time.Second)
	if len(msgs) != 1 || msgs[0].GetSubject() != "orders.after" || msgs[0].GetMetadata().GetStreamSeq() != after {
		t.Fatalf("fetched %v; want only orders.after (seq %d)", subjects(msgs), after)
	}
}

func subjects(msgs []*jetgatev1.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.GetSubject())
	}
	return out
}

func TestFilterSubjectDeliversOnlyMatches(t *testing.T) {
	o := testOptions(t)
	o.FilterSubjects = []string{"orders.eu.>"}
	p := start(t, o)
	if c := consumerInfo(t, p.NATS, "ORDERS", "billing").Config; c.FilterSubject != "orders.eu.>" {
		t.Errorf("filter subject %q; want orders.eu.>", c.FilterSubject)
	}
	cc, sc := grpcClients(t, p.GRPC)
	for _, s := range []string{"orders.us.1", "orders.eu.1", "orders.asia.1", "orders.eu.fr.2"} {
		publish(t, sc, s, "x")
	}
	got := subjects(fetch(t, cc, "billing", 10, time.Second))
	if want := []string{"orders.eu.1", "orders.eu.fr.2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("delivered %v; want %v", got, want)
	}
	if extra := fetch(t, cc, "billing", 10, 0); len(extra) != 0 {
		t.Errorf("then delivered %v; want nothing", subjects(extra))
	}
}

func TestMultipleFilterSubjects(t *testing.T) {
	o := testOptions(t)
	o.FilterSubjects = []string{"orders.eu.>", "orders.asia.>"}
	p := start(t, o)
	c := consumerInfo(t, p.NATS, "ORDERS", "billing").Config
	if c.FilterSubject != "" || !reflect.DeepEqual(c.FilterSubjects, o.FilterSubjects) {
		t.Errorf("filters %q %v; want %v", c.FilterSubject, c.FilterSubjects, o.FilterSubjects)
	}
}

func writeKeyFile(t *testing.T, secret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token.key")
	if err := os.WriteFile(path, []byte("# jetgate token key\n"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunRefusesBadOptions(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	shortKey := writeKeyFile(t, strings.Repeat("k", 31))

	tests := []struct {
		name string
		set  func(*Options)
		want []string // each must appear in the error
	}{
		{"deliver policy", func(o *Options) { o.DeliverPolicy = "bogus" }, []string{"--deliver-policy", "bogus"}},
		{"ack wait", func(o *Options) { o.AckWait = 10 * time.Millisecond }, []string{"--ack-wait", "10ms"}},
		{"max batch", func(o *Options) { o.MaxBatch = 0 }, []string{"--max-batch"}},
		{"max ack pending", func(o *Options) { o.MaxAckPending = 0 }, []string{"--max-ack-pending"}},
		{"max expires", func(o *Options) { o.MaxExpires = time.Millisecond }, []string{"--max-expires"}},
		{"stream", func(o *Options) { o.Stream = "OR.DERS" }, []string{"--stream"}},
		{"consumer", func(o *Options) { o.Consumer = "" }, []string{"--consumer"}},
		{"filter subject", func(o *Options) { o.FilterSubjects = []string{"orders eu"} }, []string{"--filter-subject"}},
		{"start seq missing", func(o *Options) { o.DeliverPolicy = "by_start_sequence" }, []string{"--start-seq"}},
		{"start seq without policy", func(o *Options) { o.StartSeq = 3 }, []string{"--start-seq", "--deliver-policy"}},
		{"start time bad", func(o *Options) { o.DeliverPolicy, o.StartTime = "by_start_time", "yesterday" }, []string{"--start-time", "yesterday"}},
		{"start time missing", func(o *Options) { o.DeliverPolicy = "by_start_time" }, []string{"--start-time"}},
		{"start time without policy", func(o *Options) { o.StartTime = "2026-01-02T15:04:05Z" }, []string{"--start-time", "--deliver-policy"}},
		{"token key missing", func(o *Options) { o.TokenKeyFile = filepath.Join(t.TempDir(), "nope") }, []string{"--token-key-file"}},
		{"token key short", func(o *Options) { o.TokenKeyFile = shortKey }, []string{"--token-key-file", "32"}},
		{"grpc addr taken", func(o *Options) { o.GRPCAddr = taken.Addr().String() }, []string{"--grpc-addr", taken.Addr().String()}},
		{"http addr taken", func(o *Options) { o.HTTPAddr = taken.Addr().String() }, []string{"--http-addr", taken.Addr().String()}},
		{"nats listen", func(o *Options) { o.NATSListen = "localhost" }, []string{"--nats-listen"}},
		{"data dir", func(o *Options) { o.DataDir = "" }, []string{"--data-dir"}},
		{"last per subject without filter", func(o *Options) { o.DeliverPolicy = "last_per_subject" },
			[]string{"--deliver-policy", "--filter-subject"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t)
			tt.set(&o)
			begin := time.Now()
			err := runErr(t, o)
			if err == nil {
				t.Fatal("Run returned nil; want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if d := time.Since(begin); d > 3*time.Second {
				t.Errorf("Run took %v to refuse; want at once", d)
			}
		})
	}
}

func TestRunRefusesAChangedNonEditableField(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	o.DataDir, o.DeliverPolicy = dir, "new"
	if err := start(t, o).Stop(); err != nil {
		t.Fatal(err)
	}

	o2 := testOptions(t)
	o2.DataDir, o2.DeliverPolicy = dir, "all"
	err := runErr(t, o2)
	if err == nil {
		t.Fatal("Run accepted a consumer whose deliver policy differs from the existing one")
	}
	for _, w := range []string{`"ORDERS"`, `"billing"`, "deliver policy"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %s", err, w)
		}
	}
}

func TestRestartSettlesOldTokensWithTheSameKey(t *testing.T) {
	dir := t.TempDir()
	key := writeKeyFile(t, "0123456789abcdefghijklmnopqrstuvwxyzABCD")
	o := testOptions(t)
	o.DataDir, o.TokenKeyFile = dir, key

	p1 := start(t, o)
	cc, sc := grpcClients(t, p1.GRPC)
	seq := publish(t, sc, "orders.new", "one")
	msgs := fetch(t, cc, "billing", 1, time.Second)
	if len(msgs) != 1 {
		t.Fatalf("process 1 fetched %d messages; want 1", len(msgs))
	}
	tok := msgs[0].GetToken()
	if err := p1.Stop(); err != nil {
		t.Fatal(err)
	}

	o2 := testOptions(t)
	o2.DataDir, o2.TokenKeyFile = dir, key
	p2 := start(t, o2)
	cc, _ = grpcClients(t, p2.GRPC)
	ack, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{tok}})
	if err != nil {
		t.Fatalf("ack through process 2: %v", err)
	}
	if len(ack.GetFailures()) != 0 {
		t.Fatalf("ack through process 2 failed: %v", ack.GetFailures())
	}
	ci := consumerInfo(t, p2.NATS, "ORDERS", "billing")
	if ci.NumAckPending != 0 || ci.AckFloor.Stream != seq {
		t.Errorf("after the ack: num_ack_pending %d, ack floor %d; want 0 and %d", ci.NumAckPending, ci.AckFloor.Stream, seq)
	}

	again, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{tok}})
	if err != nil || len(again.GetFailures()) != 0 {
		t.Errorf("repeated ack: %v %v; want success", again.GetFailures(), err)
	}
	nak, err := cc.Nak(ctxT(t), &jetgatev1.NakRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{tok}})
	if err != nil {
		t.Fatalf("nak: %v", err)
	}
	if f := nak.GetFailures(); len(f) != 1 || f[0].GetReason() != "LEASE_SETTLED" {
		t.Errorf("nak after ack: failures %v; want LEASE_SETTLED", f)
	}
}

func TestRestartWithARandomKeyVoidsOldTokens(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
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

	o2 := testOptions(t)
	o2.DataDir = dir
	p2 := start(t, o2)
	cc, _ = grpcClients(t, p2.GRPC)
	ack, err := cc.Ack(ctxT(t), &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: []string{msgs[0].GetToken()}})
	if err != nil {
		t.Fatal(err)
	}
	const why = "this gateway's key lasts only as long as its process: give every replica the same --token-key-file"
	if f := ack.GetFailures(); len(f) != 1 || f[0].GetReason() != "TOKEN_UNKNOWN_KEY" || !strings.Contains(f[0].GetMessage(), why) {
		t.Errorf("ack of a token signed by the old random key: failures %v; want TOKEN_UNKNOWN_KEY saying %q", f, why)
	}
}

func TestStopEndsRun(t *testing.T) {
	p := start(t, testOptions(t))
	conn, err := grpc.NewClient(p.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h, err := healthpb.NewHealthClient(conn).Check(ctxT(t), &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("gRPC health %v %v; want SERVING", h.GetStatus(), err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	for _, a := range []string{p.GRPC, p.HTTP} {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Run returned", a)
		}
	}
}

func TestConsumerConfig(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 500_000_000, time.UTC)
	tests := []struct {
		name string
		set  func(*Options)
		want consumer.Config
		err  string
	}{
		{
			name: "defaults",
			set:  func(*Options) {},
			want: consumer.Config{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second, MaxAckPending: 1024,
				DeliverPolicy: ptr(jetstream.DeliverAllPolicy)},
		},
		{
			name: "start sequence",
			set:  func(o *Options) { o.DeliverPolicy, o.StartSeq = "by_start_sequence", 42 },
			want: consumer.Config{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second, MaxAckPending: 1024,
				DeliverPolicy: ptr(jetstream.DeliverByStartSequencePolicy), OptStartSeq: 42},
		},
		{
			name: "start time with fraction",
			set:  func(o *Options) { o.DeliverPolicy, o.StartTime = "by_start_time", "2026-01-02T15:04:05.5Z" },
			want: consumer.Config{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second, MaxAckPending: 1024,
				DeliverPolicy: ptr(jetstream.DeliverByStartTimePolicy), OptStartTime: &at},
		},
		{
			name: "filters and limits",
			set: func(o *Options) {
				o.FilterSubjects, o.AckWait, o.MaxAckPending, o.DeliverPolicy = []string{"orders.eu.>"}, time.Second, 1, "last_per_subject"
			},
			want: consumer.Config{Stream: "ORDERS", Name: "billing", FilterSubjects: []string{"orders.eu.>"},
				AckWait: time.Second, MaxAckPending: 1, DeliverPolicy: ptr(jetstream.DeliverLastPerSubjectPolicy)},
		},
		{name: "consumer wildcard", set: func(o *Options) { o.Consumer = "bill*" }, err: "--consumer"},
		{name: "stream space", set: func(o *Options) { o.Stream = "OR DERS" }, err: "--stream"},
		{name: "empty filter", set: func(o *Options) { o.FilterSubjects = []string{""} }, err: "--filter-subject"},
		{name: "policy case", set: func(o *Options) { o.DeliverPolicy = "ALL" }, err: "--deliver-policy"},
		{name: "start time not RFC 3339", set: func(o *Options) { o.DeliverPolicy, o.StartTime = "by_start_time", "2026-01-02 15:04:05" }, err: "--start-time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Defaults()
			tt.set(&o)
			cfg, err := config.Resolve(o.ConfigFile, o.Flags)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v; want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Consumers) != 1 {
				t.Fatalf("%d consumers; want the flags' one", len(cfg.Consumers))
			}
			got := cfg.ConsumerConfigs()[0]
			if (got.OptStartTime == nil) != (tt.want.OptStartTime == nil) ||
				(got.OptStartTime != nil && !got.OptStartTime.Equal(*tt.want.OptStartTime)) {
				t.Errorf("start time %v; want %v", got.OptStartTime, tt.want.OptStartTime)
			}
			got.OptStartTime, tt.want.OptStartTime = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("config\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRunAgainstAMissingStreamNamesIt(t *testing.T) {
	ns := natstest.Start(t)
	o := testOptions(t)
	o.NATSURL = ns.ClientURL()
	o.Stream = "PAYMENTS"
	err := runErr(t, o)
	if err == nil || !strings.Contains(err.Error(), `"PAYMENTS"`) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Run against a server without the stream: %v", err)
	}
	// With --stream-subjects it creates the stream instead.
	o.StreamSubjects = []string{"payments.>"}
	p := start(t, o)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// A second jetgate on the store of one running is refused at start: two
// embedded servers writing one store each corrupt what the other keeps. The
// store is free again once the first has stopped.
func TestASecondJetgateOnOneStoreIsRefused(t *testing.T) {
	o := testOptions(t)
	p1 := start(t, o)
	o2 := testOptions(t)
	o2.DataDir = o.DataDir
	err := runErr(t, o2)
	if err == nil || !strings.Contains(err.Error(), "data-dir") || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second jetgate on one store: %v; want --data-dir in use", err)
	}
	if err := p1.Stop(); err != nil {
		t.Fatal(err)
	}
	start(t, o2)
}
