package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
)

// With no file the flags are the whole configuration, as they always were:
// one consumer with the three seeds named, and on an embedded server the
// stream <stream in lower case>.>.
func TestResolveWithoutAFileIsTheFlags(t *testing.T) {
	all := jetstream.DeliverAllPolicy
	tests := []struct {
		name        string
		set         func(*Flags)
		wantStreams []Stream
		wantCons    consumer.Config
	}{
		{"defaults", func(*Flags) {},
			[]Stream{{Name: "ORDERS", Subjects: []string{"orders.>"}, AllowMsgTTL: true, AllowAtomic: true}}, // the demo
			consumer.Config{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second, MaxAckPending: 1024, DeliverPolicy: &all}},
		{"remote NATS creates no stream", func(f *Flags) { f.NATSURL = "nats://n:4222" },
			nil,
			consumer.Config{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second, MaxAckPending: 1024, DeliverPolicy: &all}},
		{"stream subjects", func(f *Flags) {
			f.NATSURL, f.Stream, f.Consumer, f.StreamSubjects = "nats://n:4222", "PAYMENTS", "ledger", []string{"payments.>", "refunds.>"}
		},
			[]Stream{{Name: "PAYMENTS", Subjects: []string{"payments.>", "refunds.>"}}},
			consumer.Config{Stream: "PAYMENTS", Name: "ledger", AckWait: 30 * time.Second, MaxAckPending: 1024, DeliverPolicy: &all}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := DefaultFlags()
			tt.set(&f)
			c, err := Resolve("", f)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Streams, tt.wantStreams) {
				t.Errorf("streams %+v; want %+v", c.Streams, tt.wantStreams)
			}
			if got := c.ConsumerConfigs(); !reflect.DeepEqual(got, []consumer.Config{tt.wantCons}) {
				t.Errorf("consumers %+v; want %+v", got, tt.wantCons)
			}
			if c.Listen.GRPC != "127.0.0.1:9090" || c.Listen.HTTP != "127.0.0.1:8080" || c.Embedded.Listen != "" || c.Embedded.DataDir != "jetgate-data" {
				t.Errorf("process settings %+v %+v; want the flags' defaults", c.Listen, c.Embedded)
			}
		})
	}
}

// Without a file, a bad value is reported by its flag.
func TestResolveWithoutAFileNamesTheFlag(t *testing.T) {
	tests := []struct {
		set  func(*Flags)
		want string
	}{
		{func(f *Flags) { f.AckWait = 10 * time.Millisecond }, "--ack-wait: 10ms: must be at least 1s"},
		{func(f *Flags) { f.DeliverPolicy = "bogus" }, `--deliver-policy: "bogus" is not a deliver policy`},
		{func(f *Flags) { f.DeliverPolicy = "last_per_subject" }, "--deliver-policy: last_per_subject needs --filter-subject"},
		{func(f *Flags) { f.StartSeq = 3 }, "--start-seq: 3 goes with --deliver-policy by_start_sequence"},
		{func(f *Flags) { f.DeliverPolicy = "by_start_sequence" }, "--deliver-policy: by_start_sequence needs --start-seq"},
		{func(f *Flags) { f.DeliverPolicy, f.StartTime = "by_start_time", "yesterday" }, `--start-time: "yesterday": give an RFC 3339 time`},
		{func(f *Flags) { f.Consumer = "" }, "--consumer: required"},
		{func(f *Flags) { f.Stream = "OR.DERS" }, `--stream: "OR.DERS" is not a valid NATS name`},
		{func(f *Flags) { f.FilterSubjects = []string{"orders eu"} }, "--filter-subject: "},
		{func(f *Flags) { f.MaxBatch = 0 }, "--max-batch: 0: must be at least 1"},
		{func(f *Flags) { f.NATSListen = "localhost" }, "--nats-listen: "},
		{func(f *Flags) { f.DataDir = "" }, "--data-dir: "},
		{func(f *Flags) { f.NATSURL, f.NATSTLSCert = "nats://n", "c.pem" }, "--nats-tls-cert: goes together with --nats-tls-key"},
	}
	for _, tt := range tests {
		f := DefaultFlags()
		tt.set(&f)
		_, err := Resolve("", f)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("error %v; want one starting %q", err, tt.want)
		}
	}
}

// given makes flags whose Given names the flags set.
func given(set func(*Flags), names ...string) Flags {
	f := DefaultFlags()
	set(&f)
	f.Given = make(map[string]bool)
	for _, n := range names {
		f.Given[n] = true
	}
	return f
}

// A flag given explicitly wins over the file; one left at its default does
// not.
func TestFlagsOverrideTheFile(t *testing.T) {
	tests := []struct {
		name  string
		flags Flags
		check func(t *testing.T, c *Config)
	}{
		{"nothing given: the file as it is", given(func(f *Flags) { f.GRPCAddr, f.AckWait = ":1", time.Hour }),
			func(t *testing.T, c *Config) {
				if c.Listen.GRPC != "127.0.0.1:9090" || c.Consumers[0].AckWait != Duration(30*time.Second) {
					t.Errorf("flags not given changed the file: %+v %+v", c.Listen, c.Consumers[0])
				}
			}},
		{"process flags", given(func(f *Flags) {
			f.GRPCAddr, f.HTTPAddr, f.NATSURL, f.TokenKeyFile, f.MaxBatch = "127.0.0.1:0", "127.0.0.1:1", "nats://a:4222", "/k", 7
		}, "grpc-addr", "http-addr", "nats-url", "token-key-file", "max-batch"),
			func(t *testing.T, c *Config) {
				if c.Listen.GRPC != "127.0.0.1:0" || c.Listen.HTTP != "127.0.0.1:1" || c.NATS.URL != "nats://a:4222" ||
					!reflect.DeepEqual(c.Tokens.KeyFiles, []string{"/k"}) || c.Limits.MaxBatch != 7 {
					t.Errorf("got %+v %+v %+v %+v", c.Listen, c.NATS, c.Tokens, c.Limits)
				}
				if c.Limits.MaxExpires != Duration(30*time.Second) || len(c.Consumers) != 2 {
					t.Errorf("the rest of the file changed: %+v, %d consumers", c.Limits, len(c.Consumers))
				}
			}},
		{"consumer flags pick a consumer by stream", given(func(f *Flags) {
			f.Stream, f.AckWait, f.FilterSubjects = "PAYMENTS", 5*time.Second, []string{"payments.card.>"}
		},
			"stream", "ack-wait", "filter-subject"),
			func(t *testing.T, c *Config) {
				l := c.Consumers[1]
				if l.AckWait != Duration(5*time.Second) || !reflect.DeepEqual(l.FilterSubjects, []string{"payments.card.>"}) || l.MaxDeliver != 3 {
					t.Errorf("ledger %+v", l)
				}
				if b := c.Consumers[0]; b.AckWait != Duration(30*time.Second) {
					t.Errorf("billing changed: %+v", b)
				}
			}},
		{"consumer flags add a consumer both name", given(func(f *Flags) { f.Stream, f.Consumer, f.MaxAckPending = "ORDERS", "audit", 10 },
			"stream", "consumer", "max-ack-pending"),
			func(t *testing.T, c *Config) {
				all := jetstream.DeliverAllPolicy
				want := consumer.Config{Stream: "ORDERS", Name: "audit", AckWait: 30 * time.Second, MaxAckPending: 10, DeliverPolicy: &all}
				if len(c.Consumers) != 3 || !reflect.DeepEqual(c.ConsumerConfigs()[2], want) {
					t.Errorf("consumers %+v; want a third, %+v", c.ConsumerConfigs(), want)
				}
				if len(c.Streams) != 3 {
					t.Errorf("streams %+v; ORDERS is configured already", c.Streams)
				}
			}},
		{"stream subjects", given(func(f *Flags) { f.Stream, f.StreamSubjects = "PAYMENTS", []string{"pay.>"} }, "stream", "stream-subjects"),
			func(t *testing.T, c *Config) {
				if s := c.StreamNamed("PAYMENTS"); s == nil || !reflect.DeepEqual(s.Subjects, []string{"pay.>"}) {
					t.Errorf("PAYMENTS %+v", s)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Resolve(examplePath, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestFlagsOverridingTheFileAreCheckedAsFlags(t *testing.T) {
	tests := []struct {
		name  string
		flags Flags
		want  string
	}{
		{"which consumer", given(func(f *Flags) { f.AckWait = 5 * time.Second }, "ack-wait"),
			"--ack-wait: 2 consumers of the configuration file match: say which with --stream and --consumer"},
		{"no such consumer", given(func(f *Flags) { f.Consumer = "nobody" }, "consumer"),
			"--consumer: no consumer of the configuration file matches: to add one, give both --stream and --consumer"},
		{"bad value", given(func(f *Flags) { f.Stream, f.AckWait = "PAYMENTS", 10*time.Millisecond }, "stream", "ack-wait"),
			"--ack-wait: 10ms: must be at least 1s"},
		{"bad address", given(func(f *Flags) { f.GRPCAddr = "nowhere" }, "grpc-addr"),
			`--grpc-addr: "nowhere": give host:port`},
		{"unknown flag", given(func(*Flags) {}, "log-level"), "--log-level: not a setting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(examplePath, tt.flags)
			var e *Error
			if !errors.As(err, &e) || e.Flag == "" || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v; want one starting %q", err, tt.want)
			}
		})
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jetgate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file of one consumer needs no --stream or --consumer; a given deliver
// policy drops the file's start position.
func TestFlagsOverrideTheOnlyConsumer(t *testing.T) {
	path := writeFile(t, "consumers:\n  - {stream: ORDERS, name: billing, deliver_policy: by_start_sequence, opt_start_seq: 9}\n")
	c, err := Resolve(path, given(func(f *Flags) { f.DeliverPolicy = "new" }, "deliver-policy"))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Consumers[0]; k.DeliverPolicy != "new" || k.OptStartSeq != 0 || c.named("consumers[0].opt_start_seq") {
		t.Errorf("consumer %+v; want policy new and no start sequence", k)
	}
	c, err = Resolve(path, given(func(f *Flags) { f.StartSeq = 20 }, "start-seq"))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Consumers[0]; k.DeliverPolicy != "by_start_sequence" || k.OptStartSeq != 20 {
		t.Errorf("consumer %+v; want start sequence 20", k)
	}
	// An error about a field the file gave still points into the file.
	_, err = Resolve(path, given(func(f *Flags) { f.DeliverPolicy = "last_per_subject" }, "deliver-policy"))
	if err == nil || !strings.HasPrefix(err.Error(), "--deliver-policy: last_per_subject needs filter_subjects") {
		t.Errorf("error %v", err)
	}
}

// A file without consumers and the consumer flags: the flags' consumer, as
// with no file.
func TestFlagsAddTheConsumerToAFileWithout(t *testing.T) {
	path := writeFile(t, "listen: {grpc: \"127.0.0.1:0\"}\n")
	c, err := Resolve(path, given(func(f *Flags) { f.Stream, f.Consumer = "ORDERS", "billing" }, "stream", "consumer"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Consumers) != 1 || !reflect.DeepEqual(c.Streams, []Stream{{Name: "ORDERS", Subjects: []string{"orders.>"}, AllowMsgTTL: true, AllowAtomic: true}}) {
		t.Errorf("consumers %+v streams %+v", c.Consumers, c.Streams)
	}
	if _, err := Resolve(path, Flags{}); err == nil || !strings.Contains(err.Error(), "consumers: no consumer is configured") {
		t.Errorf("a file without consumers and no flags: %v", err)
	}
}
