package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestMaskURLs(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"nats://a:4222":             "nats://a:4222",
		"nats://user:pw@a:4222":     "nats://user:***@a:4222",
		"nats://s3cr3t@a:4222":      "nats://***@a:4222",
		"tls://u:p@a:1,tls://u:q@b": "tls://u:***@a:1,tls://u:***@b",
		"u:p@a:4222":                "u:***@a:4222",
		"nats://u:p@ss@a:4222":      "nats://u:***@a:4222",
	} {
		if got := MaskURLs(in); got != want {
			t.Errorf("MaskURLs(%q) = %q; want %q", in, got, want)
		}
	}
}

// check-config's output: the effective configuration, defaults filled in,
// secrets masked, key files named but never read; and Parse reads it back
// to the same configuration.
func TestWriteMasksAndReadsBack(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "token.key")
	if err := os.WriteFile(key, []byte("the-token-key-that-must-never-be-printed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "jetgate.yaml")
	text := `nats: {url: "nats://jetgate:hunter2@n1:4222,nats://tok3n@n2:4222", creds: /etc/jetgate/nats.creds}
tokens: {key_files: [` + key + `]}
streams: [{name: ORDERS, subjects: [orders.>]}]
consumers:
  - {stream: ORDERS, name: billing, max_deliver: 5, backoff: [1s, 1m30s]}
  - {stream: PAYMENTS, name: ledger, ack_wait: 1m, max_ack_pending: 10, deliver_policy: new, dead_letter: {subject: dlq.ledger}}
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(path, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Write(&out, c); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, secret := range []string{"hunter2", "tok3n", "the-token-key"} {
		if strings.Contains(got, secret) {
			t.Errorf("output shows %q:\n%s", secret, got)
		}
	}
	for _, want := range []string{
		"# effective jetgate configuration of " + path,
		"#   stream PAYMENTS exists (it is not in streams)",
		"#   a stream other than PAYMENTS binds dead-letter subject dlq.ledger",
		"url: nats://jetgate:***@n1:4222,nats://***@n2:4222\n",
		"creds: /etc/jetgate/nats.creds\n",
		"key_files: [" + key + "]\n",
		"data_dir: jetgate-data\n",
		"grpc: 127.0.0.1:9090\n",
		"name: billing # on create: ack_wait 1s (the backoff's first step, which the server takes), max_ack_pending 1024, deliver_policy all; an existing consumer keeps its own\n",
		"backoff: [1s, 1m30s]\n",
		"    name: ledger\n",
		"max_body_bytes: 4194304\n",
		"max_expires: 30s\n",
		"max_nak_delay: 24h\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}

	back, err := Parse("out.yaml", out.Bytes())
	if err != nil {
		t.Fatalf("the output does not parse: %v\n%s", err, got)
	}
	back.fillDefaults()
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.ConsumerConfigs(), c.ConsumerConfigs()) || !reflect.DeepEqual(back.Streams, c.Streams) ||
		back.Limits != c.Limits || back.Listen.GRPC != c.Listen.GRPC || back.Embedded != c.Embedded {
		t.Errorf("read back\n %+v\nwant\n %+v", back, c)
	}
}
