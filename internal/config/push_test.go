package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/push"
)

// pushFile is good with a push block on its second consumer (line 13 on).
func pushFile(block string) string {
	return badFile(13, "    dead_letter: {subject: dead.audit}\n    push:\n"+block)
}

func TestBadPushBlocks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("not-a-whsec\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, block, path, msg string
	}{
		{"no url", "      concurrency: 2", "consumers[1].push.url", "is required"},
		{"ftp", "      url: ftp://host/x", "consumers[1].push.url", `scheme "ftp" is not http or https`},
		{"h2c scheme", "      url: h2c://host/x", "consumers[1].push.url", "for h2c, give an http URL and http2: true"},
		{"http2 not a bool", "      url: http://h\n      http2: sometimes", "consumers[1].push.http2", "sometimes"},
		{"no host", "      url: http:///x", "consumers[1].push.url", "has no host"},
		{"credentials in the url", "      url: https://u:p@host/x", "consumers[1].push.url", "must not carry credentials"},
		{"concurrency 0", "      url: http://h\n      concurrency: -1", "consumers[1].push.concurrency", "must be 1 or more"},
		{"format", "      url: http://h\n      format: xml", "consumers[1].push.format", `"xml" is not one of raw, json, cloudevents`},
		{"retry max below min", "      url: http://h\n      retry: {min: 10s, max: 1s}", "consumers[1].push.retry.max", "must be at least retry.min"},
		{"missing secret file", "      url: http://h\n      signing_secret_file: " + filepath.Join(dir, "none"), "consumers[1].push.signing_secret_file", "no such file"},
		{"not a whsec secret", "      url: http://h\n      signing_secret_file: " + secret, "consumers[1].push.signing_secret_file", `must start with "whsec_"`},
		{"cert without key", "      url: https://h\n      tls: {cert: " + secret + "}", "consumers[1].push.tls.cert", "go together"},
		{"unknown field", "      url: http://h\n      concurency: 2", "consumers[1].push.concurency", `unknown field "concurency"`},
		{"bad timeout", "      url: http://h\n      timeout: soon", "consumers[1].push.timeout", `"soon" is not a duration`},
		// A reviewer's: 1ns pushed nothing, with no word; 1ms retried all but at once.
		{"timeout of 1ns", "      url: http://h\n      timeout: 1ns", "consumers[1].push.timeout", "is under 100ms"},
		{"retry of 1ms", "      url: http://h\n      retry: {min: 1ms, max: 1s}", "consumers[1].push.retry.min", "is under 100ms"},
		{"retry past max_nak_delay", "      url: http://h\n      retry: {min: 1s, max: 1000h}", "consumers[1].push.retry.max", "above limits.max_nak_delay (24h0m0s)"},
		{"batch of 1001", "      url: http://h\n      batch: {max_messages: 1001}", "consumers[1].push.batch.max_messages", "must be between 1 and 1000, got 1001"},
		{"batch of -1", "      url: http://h\n      batch:\n        max_messages: -1", "consumers[1].push.batch.max_messages", "must be between 1 and 1000, got -1"},
		{"batch bytes negative", "      url: http://h\n      batch: {max_bytes: -5}", "consumers[1].push.batch.max_bytes", "must be between 1 and 67108864 (64 MiB), got -5"},
		{"batch bytes over 64 MiB", "      url: http://h\n      batch: {max_bytes: 67108865}", "consumers[1].push.batch.max_bytes", "must be between 1 and 67108864"},
		{"batch bytes with no unit known", "      url: http://h\n      batch: {max_bytes: 1MeB}", "consumers[1].push.batch.max_bytes", `"1MeB" is not a size`},
		{"batch bytes with a unit, over 64 MiB", "      url: http://h\n      batch: {max_bytes: 65MiB}", "consumers[1].push.batch.max_bytes", "must be between 1 and 67108864"},
		{"batch wait negative", "      url: http://h\n      batch: {max_wait: -1s}", "consumers[1].push.batch.max_wait", "must be positive"},
		{"batch wait too long", "      url: http://h\n      batch: {max_wait: 10m}", "consumers[1].push.batch.max_wait", "must be at most 5m0s, got 10m0s"},
		{"batch wait not a duration", "      url: http://h\n      batch: {max_wait: 20}", "consumers[1].push.batch.max_wait", `"20" is not a duration`},
		{"batch unknown field", "      url: http://h\n      batch: {max_msgs: 10}", "consumers[1].push.batch.max_msgs", `unknown field "max_msgs"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAndValidate("bad.yaml", pushFile(tt.block))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T); want a *config.Error", err, err)
			}
			if e.Path != tt.path || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("%v; want %s: ...%s", err, tt.path, tt.msg)
			}
			if e.Line < 14 {
				t.Errorf("line %d: not the push block's", e.Line)
			}
		})
	}
}

// The example runs as it is, defaults filled and the secret file read.
func TestPushExampleFile(t *testing.T) {
	wd, _ := os.Getwd()
	t.Chdir(filepath.Join(wd, "../.."))
	c, err := Resolve("examples/push.yaml", DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	want := []push.Config{{
		Stream: "ORDERS", Consumer: "shipping", URL: "http://127.0.0.1:8000/hooks/orders", Concurrency: 8,
		Timeout: 30 * time.Second, Format: push.FormatRaw, RetryMin: time.Second, RetryMax: time.Minute,
		SigningSecretFile: "examples/push-secret",
	}}
	if got := c.PushConfigs(); !reflect.DeepEqual(got, want) {
		t.Errorf("push\n got %+v\nwant %+v", got, want)
	}
}

// http2: true is read into the pusher's configuration, over http (h2c)
// and https (h2) alike; unset, it is false.
func TestPushHTTP2(t *testing.T) {
	for _, tc := range []struct {
		block string
		want  bool
	}{
		{"      url: http://h/x\n      http2: true", true},
		{"      url: https://h/x\n      http2: true", true},
		{"      url: http://h/x", false},
	} {
		c, err := parseAndValidate("p.yaml", pushFile(tc.block))
		if err != nil {
			t.Fatalf("%q: %v", tc.block, err)
		}
		if got := c.PushConfigs(); len(got) != 1 || got[0].HTTP2 != tc.want {
			t.Errorf("%q: %+v; want http2 %v", tc.block, got, tc.want)
		}
	}
}

// check-config shows the defaults a push block runs with, and hides a
// query of its URL (it may carry a key).
func TestWriteShowsPushDefaultsAndMasksTheQuery(t *testing.T) {
	c, err := parseAndValidate("p.yaml", pushFile("      url: https://h/hook?code=s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"url: https://h/hook?***", "concurrency: 8", "timeout: 30s", "format: raw", "min: 1s", "max: 10m"} {
		if !strings.Contains(out, want) {
			t.Errorf("check-config output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("the query's secret is printed:\n%s", out)
	}
}

// A batch block is read into the pusher's configuration, its unset fields
// the defaults; without one, a request carries one message. check-config
// shows the defaults it runs with.
func TestPushBatch(t *testing.T) {
	for _, tc := range []struct {
		block string
		want  *push.Batch
	}{
		{"      url: http://h/x", nil},
		{"      url: http://h/x\n      batch: {}", &push.Batch{MaxMessages: 100, MaxBytes: 1 << 20, MaxWait: 20 * time.Millisecond}},
		{"      url: http://h/x\n      batch: {max_messages: 10, max_bytes: 65536, max_wait: 50ms}", &push.Batch{MaxMessages: 10, MaxBytes: 65536, MaxWait: 50 * time.Millisecond}},
		{"      url: http://h/x\n      batch: {max_messages: 100, max_bytes: 1MiB, max_wait: 20ms}", &push.Batch{MaxMessages: 100, MaxBytes: 1 << 20, MaxWait: 20 * time.Millisecond}},
		{"      url: http://h/x\n      batch: {max_bytes: 512KB}", &push.Batch{MaxMessages: 100, MaxBytes: 512_000, MaxWait: 20 * time.Millisecond}},
		{"      url: http://h/x\n      format: cloudevents\n      batch:\n        max_messages: 1000", &push.Batch{MaxMessages: 1000, MaxBytes: 1 << 20, MaxWait: 20 * time.Millisecond}},
	} {
		c, err := parseAndValidate("p.yaml", pushFile(tc.block))
		if err != nil {
			t.Fatalf("%q: %v", tc.block, err)
		}
		got := c.PushConfigs()
		if len(got) != 1 || !reflect.DeepEqual(got[0].Batch, tc.want) {
			t.Errorf("%q: batch %+v; want %+v", tc.block, got[0].Batch, tc.want)
		}
	}
	c, err := parseAndValidate("p.yaml", pushFile("      url: http://h/x\n      batch: {max_messages: 10}"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"batch:", "max_messages: 10", "max_bytes: 1MiB", "max_wait: 20ms"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("check-config output lacks %q:\n%s", want, b.String())
		}
	}
}

// More requests in flight than the consumer lets messages be is warned of
// (a reviewer saw concurrency 100000 taken without a word): the server's
// max_ack_pending may differ from the file's, so it is not refused.
func TestAPushConcurrencyAboveMaxAckPendingIsWarnedOf(t *testing.T) {
	c, err := Parse("jetgate.yaml", []byte("consumers:\n  - stream: ORDERS\n    name: hook\n    max_ack_pending: 50\n    push: {url: http://h, concurrency: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "consumers[0].push.concurrency: 100 is above the consumer's max_ack_pending (50)") {
		t.Fatalf("warnings %q; want one of concurrency above max_ack_pending", ws)
	}
	c, err = Parse("jetgate.yaml", []byte("consumers:\n  - stream: ORDERS\n    name: hook\n    push: {url: http://h, concurrency: 100}\n"))
	if err != nil || len(c.Warnings()) != 0 {
		t.Fatalf("concurrency within the seed's 1024: %v, warnings %q; want none", err, c.Warnings())
	}
}
