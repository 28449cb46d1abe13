package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/app"
	"github.com/jetgate/jetgate/internal/config"
)

// envOf makes a lookup function over a fixed environment.
func envOf(kv ...string) func(string) (string, bool) {
	m := make(map[string]string)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func mustParse(t *testing.T, args []string, env func(string) (string, bool)) app.Options {
	t.Helper()
	o, err := parse(args, env)
	if err != nil {
		t.Fatalf("parse(%q): %v", args, err)
	}
	if o.Logger == nil {
		t.Fatal("parse left Logger nil")
	}
	return o
}

func TestParseDefaults(t *testing.T) {
	o := mustParse(t, nil, envOf())
	if !o.Logger.Enabled(context.Background(), slog.LevelInfo) || o.Logger.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("default log level is not info")
	}
	o.Logger = nil
	if d := app.Defaults(); !reflect.DeepEqual(o, d) {
		t.Errorf("parse with no flags and no environment:\n got %+v\nwant app.Defaults() %+v", o, d)
	}
	// The defaults the flags document.
	want := app.Options{
		Flags: config.Flags{
			DataDir:       "jetgate-data",
			Stream:        "ORDERS",
			Consumer:      "billing",
			AckWait:       30 * time.Second,
			MaxAckPending: 1024,
			DeliverPolicy: "all",
			GRPCAddr:      "127.0.0.1:9090",
			HTTPAddr:      "127.0.0.1:8080",
			MaxBatch:      1000,
			MaxExpires:    30 * time.Second,
			MaxBodyBytes:  4 << 20,
			MaxFetchBytes: 3 << 20,
			Metrics:       true,
			Reflection:    true,
		},
		ShutdownGrace: 10 * time.Second,
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", o, want)
	}
}

// settings lists every flag with its environment variable, a value to set,
// and how to read the result.
var settings = []struct {
	flag, env, value string
	get              func(app.Options) any
	want             any
}{
	{"config", "JETGATE_CONFIG", "/etc/jetgate/jetgate.yaml", func(o app.Options) any { return o.ConfigFile }, "/etc/jetgate/jetgate.yaml"},
	{"nats-url", "JETGATE_NATS_URL", "nats://a:4222,nats://b:4222", func(o app.Options) any { return o.NATSURL }, "nats://a:4222,nats://b:4222"},
	{"nats-creds", "JETGATE_NATS_CREDS", "/etc/jetgate/nats.creds", func(o app.Options) any { return o.NATSCreds }, "/etc/jetgate/nats.creds"},
	{"js-domain", "JETGATE_JS_DOMAIN", "hub", func(o app.Options) any { return o.JSDomain }, "hub"},
	{"nats-tls-ca", "JETGATE_NATS_TLS_CA", "/etc/jetgate/ca.pem", func(o app.Options) any { return o.NATSTLSCA }, "/etc/jetgate/ca.pem"},
	{"nats-tls-cert", "JETGATE_NATS_TLS_CERT", "/etc/jetgate/cert.pem", func(o app.Options) any { return o.NATSTLSCert }, "/etc/jetgate/cert.pem"},
	{"nats-tls-key", "JETGATE_NATS_TLS_KEY", "/etc/jetgate/key.pem", func(o app.Options) any { return o.NATSTLSKey }, "/etc/jetgate/key.pem"},
	{"data-dir", "JETGATE_DATA_DIR", "/var/lib/jetgate", func(o app.Options) any { return o.DataDir }, "/var/lib/jetgate"},
	{"nats-listen", "JETGATE_NATS_LISTEN", "127.0.0.1:4333", func(o app.Options) any { return o.NATSListen }, "127.0.0.1:4333"},
	{"stream", "JETGATE_STREAM", "PAYMENTS", func(o app.Options) any { return o.Stream }, "PAYMENTS"},
	{"stream-subjects", "JETGATE_STREAM_SUBJECTS", "payments.>, refunds.>", func(o app.Options) any { return o.StreamSubjects }, []string{"payments.>", "refunds.>"}},
	{"consumer", "JETGATE_CONSUMER", "ledger", func(o app.Options) any { return o.Consumer }, "ledger"},
	{"on-demand", "JETGATE_ON_DEMAND", "ORDERS/team-*, */audit", func(o app.Options) any { return o.OnDemand }, []string{"ORDERS/team-*", "*/audit"}},
	{"filter-subject", "JETGATE_FILTER_SUBJECT", "orders.eu.>,orders.us.>", func(o app.Options) any { return o.FilterSubjects }, []string{"orders.eu.>", "orders.us.>"}},
	{"ack-wait", "JETGATE_ACK_WAIT", "45s", func(o app.Options) any { return o.AckWait }, 45 * time.Second},
	{"max-ack-pending", "JETGATE_MAX_ACK_PENDING", "64", func(o app.Options) any { return o.MaxAckPending }, 64},
	{"deliver-policy", "JETGATE_DELIVER_POLICY", "by_start_sequence", func(o app.Options) any { return o.DeliverPolicy }, "by_start_sequence"},
	{"start-seq", "JETGATE_START_SEQ", "42", func(o app.Options) any { return o.StartSeq }, uint64(42)},
	{"start-time", "JETGATE_START_TIME", "2026-01-02T15:04:05Z", func(o app.Options) any { return o.StartTime }, "2026-01-02T15:04:05Z"},
	{"grpc-addr", "JETGATE_GRPC_ADDR", "127.0.0.1:1", func(o app.Options) any { return o.GRPCAddr }, "127.0.0.1:1"},
	{"http-addr", "JETGATE_HTTP_ADDR", "127.0.0.1:2", func(o app.Options) any { return o.HTTPAddr }, "127.0.0.1:2"},
	{"token-key-file", "JETGATE_TOKEN_KEY_FILE", "/etc/jetgate/key", func(o app.Options) any { return o.TokenKeyFile }, "/etc/jetgate/key"},
	{"max-batch", "JETGATE_MAX_BATCH", "250", func(o app.Options) any { return o.MaxBatch }, 250},
	{"max-expires", "JETGATE_MAX_EXPIRES", "1m", func(o app.Options) any { return o.MaxExpires }, time.Minute},
	{"max-body-bytes", "JETGATE_MAX_BODY_BYTES", "65536", func(o app.Options) any { return o.MaxBodyBytes }, int64(65536)},
	{"max-fetch-bytes", "JETGATE_MAX_FETCH_BYTES", "131072", func(o app.Options) any { return o.MaxFetchBytes }, int64(131072)},
	{"allow-unauthenticated", "JETGATE_ALLOW_UNAUTHENTICATED", "true", func(o app.Options) any { return o.AllowUnauthenticated }, true},
	{"metrics", "JETGATE_METRICS", "false", func(o app.Options) any { return o.Metrics }, false},
	{"reflection", "JETGATE_REFLECTION", "false", func(o app.Options) any { return o.Reflection }, false},
	{"log-level", "JETGATE_LOG_LEVEL", "debug", func(o app.Options) any { return o.Logger.Enabled(context.Background(), slog.LevelDebug) }, true},
}

func TestParseEnvironment(t *testing.T) {
	for _, s := range settings {
		t.Run(s.env, func(t *testing.T) {
			o := mustParse(t, nil, envOf(s.env, s.value))
			if got := s.get(o); !reflect.DeepEqual(got, s.want) {
				t.Errorf("%s=%q: got %#v; want %#v", s.env, s.value, got, s.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	for _, s := range settings {
		t.Run(s.flag, func(t *testing.T) {
			o := mustParse(t, []string{"--" + s.flag + "=" + s.value}, envOf())
			if got := s.get(o); !reflect.DeepEqual(got, s.want) {
				t.Errorf("--%s %q: got %#v; want %#v", s.flag, s.value, got, s.want)
			}
		})
	}
}

func TestParseFlagWinsOverEnvironment(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		get  func(app.Options) any
		want any
	}{
		{"max batch", []string{"JETGATE_MAX_BATCH", "5"}, []string{"--max-batch", "7"},
			func(o app.Options) any { return o.MaxBatch }, 7},
		{"nats url", []string{"JETGATE_NATS_URL", "nats://env:4222"}, []string{"--nats-url=nats://flag:4222"},
			func(o app.Options) any { return o.NATSURL }, "nats://flag:4222"},
		{"ack wait", []string{"JETGATE_ACK_WAIT", "1m"}, []string{"-ack-wait", "2s"},
			func(o app.Options) any { return o.AckWait }, 2 * time.Second},
		{"log level", []string{"JETGATE_LOG_LEVEL", "debug"}, []string{"--log-level", "error"},
			func(o app.Options) any { return o.Logger.Enabled(context.Background(), slog.LevelWarn) }, false},
		// A list given on the command line replaces the environment's, as
		// every other flag does; it does not add to it.
		{"filter subject", []string{"JETGATE_FILTER_SUBJECT", "orders.eu.>,orders.us.>"}, []string{"--filter-subject", "orders.asia.>"},
			func(o app.Options) any { return o.FilterSubjects }, []string{"orders.asia.>"}},
		{"stream subjects", []string{"JETGATE_STREAM_SUBJECTS", "a.>"}, []string{"--stream-subjects", "b.>"},
			func(o app.Options) any { return o.StreamSubjects }, []string{"b.>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := mustParse(t, tt.args, envOf(tt.env...))
			if got := tt.get(o); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s=%s with %q: got %#v; want the flag's %#v", tt.env[0], tt.env[1], tt.args, got, tt.want)
			}
		})
	}
}

func TestParseRepeatedListFlag(t *testing.T) {
	o := mustParse(t, []string{"--filter-subject", "orders.eu.>", "--filter-subject", " orders.us.>, orders.asia.> "}, envOf())
	if want := []string{"orders.eu.>", "orders.us.>", "orders.asia.>"}; !reflect.DeepEqual(o.FilterSubjects, want) {
		t.Errorf("filter subjects %q; want %q", o.FilterSubjects, want)
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want []string // each must appear in the error
	}{
		{"bad env int", nil, []string{"JETGATE_MAX_BATCH", "abc"}, []string{"JETGATE_MAX_BATCH", "--max-batch", "abc"}},
		{"bad env duration", nil, []string{"JETGATE_ACK_WAIT", "soon"}, []string{"JETGATE_ACK_WAIT", "--ack-wait"}},
		{"bad env uint", nil, []string{"JETGATE_START_SEQ", "-1"}, []string{"JETGATE_START_SEQ", "--start-seq"}},
		{"bad env log level", nil, []string{"JETGATE_LOG_LEVEL", "bogus"}, []string{"JETGATE_LOG_LEVEL", "--log-level", "bogus"}},
		{"bad flag log level", []string{"--log-level", "bogus"}, nil, []string{"log-level", "bogus"}},
		{"bad flag int", []string{"--max-batch", "many"}, nil, []string{"max-batch"}},
		{"unknown flag", []string{"--bogus"}, nil, []string{"bogus"}},
		{"stray argument", []string{"serve"}, nil, []string{`"serve"`}},
		{"stray argument after flags", []string{"--stream", "ORDERS", "extra"}, nil, []string{`"extra"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.args, envOf(tt.env...))
			if err == nil {
				t.Fatal("parse accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

// Given lists what the command line and the environment set, for the
// configuration file to yield to; --config and --log-level are not settings
// of the file.
func TestParseGiven(t *testing.T) {
	o := mustParse(t, []string{"--grpc-addr", ":1", "--config", "f.yaml", "--log-level", "debug"}, envOf("JETGATE_ACK_WAIT", "5s", "JETGATE_BOGUS", "x"))
	if want := map[string]bool{"grpc-addr": true, "ack-wait": true}; !reflect.DeepEqual(o.Given, want) {
		t.Errorf("given %v; want %v", o.Given, want)
	}
	if o := mustParse(t, nil, envOf()); o.Given != nil {
		t.Errorf("given %v with nothing set; want nil", o.Given)
	}
}

// Every flag but --config and --log-level is a setting the configuration
// file has, so that the flag can override it.
func TestEveryFlagOverridesTheFile(t *testing.T) {
	file := writeConfig(t, "consumers: [{stream: ORDERS, name: billing}]\n")
	for _, s := range settings {
		if s.flag == "config" || s.flag == "log-level" {
			continue
		}
		t.Run(s.flag, func(t *testing.T) {
			o := mustParse(t, []string{"--config", file, "--" + s.flag + "=" + s.value}, envOf())
			_, err := config.Resolve(o.ConfigFile, o.Flags)
			if err != nil && strings.Contains(err.Error(), "not a setting") {
				t.Error(err)
			}
		})
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jetgate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkConfigRun runs `jetgate check-config args...` and returns its exit
// code and what it wrote.
func checkConfigRun(args []string, env func(string) (string, bool)) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = checkConfig(args, env, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckConfigGoodFile(t *testing.T) {
	code, stdout, stderr := checkConfigRun([]string{"--config", "../../examples/two-consumers.yaml"}, envOf())
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	for _, want := range []string{"# effective jetgate configuration of ../../examples/two-consumers.yaml",
		"name: billing\n", "name: ledger # on create: max_ack_pending 1024, deliver_policy all", "subject: dead.billing", "max_fetch_bytes: 3145728"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// Secrets are masked; flags and the environment apply as they would to a
// start; JETGATE_CONFIG names the file too.
func TestCheckConfigMasksSecretsAndAppliesFlags(t *testing.T) {
	file := writeConfig(t, `nats: {url: "nats://jetgate:hunter2@nats-1:4222"}
consumers: [{stream: ORDERS, name: billing}]
`)
	code, stdout, stderr := checkConfigRun([]string{"--grpc-addr", "127.0.0.1:7000"}, envOf("JETGATE_CONFIG", file, "JETGATE_ACK_WAIT", "45s"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "hunter2") || !strings.Contains(stdout, "url: nats://jetgate:***@nats-1:4222\n") {
		t.Errorf("the password is not masked:\n%s", stdout)
	}
	for _, want := range []string{"grpc: 127.0.0.1:7000\n", "ack_wait: 45s\n", "# checked at start-up, on the NATS server:\n#   stream ORDERS exists"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCheckConfigBadFile(t *testing.T) {
	file := writeConfig(t, "streams: [{name: ORDERS, subjects: [orders.>]}]\nconsumers:\n  - stream: ORDERS\n    name: billing\n    ack_wait: 3x\n")
	for name, args := range map[string][]string{
		"bad duration": {"--config", file},
		"missing file": {"--config", filepath.Join(t.TempDir(), "nope.yaml")},
		"no file":      nil,
		"bad flag":     {"--config", file, "--max-batch", "many"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := checkConfigRun(args, envOf())
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "jetgate check-config: ") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, an error", code, stdout, stderr)
			}
		})
	}
	_, _, stderr := checkConfigRun([]string{"--config", file}, envOf())
	if want := "jetgate check-config: " + file + `:5: consumers[0].ack_wait: "3x" is not a duration`; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr %q; want it to start %q", stderr, want)
	}
}
