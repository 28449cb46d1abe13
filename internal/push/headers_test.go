package push_test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/push"
)

// rawPublish publishes one message as bytes on the NATS protocol itself,
// as any client may, past nats.go's own checks of header names, and returns
// once the server has read it (its PONG).
func (e *env) rawPublish(subject string, header, data string) {
	e.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.ns.ClientURL(), "nats://"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	var b bytes.Buffer
	b.WriteString("CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"protocol\":1}\r\n")
	fmt.Fprintf(&b, "HPUB %s %d %d\r\n%s%s\r\nPING\r\n", subject, len(header), len(header)+len(data), header, data)
	if _, err := c.Write(b.Bytes()); err != nil {
		e.t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	var got []byte
	for !bytes.Contains(got, []byte("PONG")) {
		n, err := c.Read(buf)
		if err != nil {
			e.t.Fatalf("publish %s: %v after %q", subject, err, got)
		}
		got = append(got, buf[:n]...)
	}
}

// A message's Proxy-Authorization is a credential, and its
// Webhook-Signature jetgate's to set: neither is pushed, signed or not.
func TestAMessageCannotPushCredentialsOrASignature(t *testing.T) {
	forged := nats.Header{
		"Proxy-Authorization": {"Basic cHJveHk6c2VjcmV0"}, "Webhook-Signature": {"v1,Zm9yZ2Vk"}, "X-Ok": {"yes"},
	}
	t.Run("unsigned", func(t *testing.T) {
		e := newEnv(t)
		rc := newReceiver(t)
		e.replica(consumerCfg(), push.Config{URL: rc.URL})
		e.publish("orders.new", "x", forged)
		p := rc.next(t, 5*time.Second)
		for _, k := range []string{"Proxy-Authorization", "Webhook-Signature"} {
			if got := p.header.Values(k); len(got) != 0 {
				t.Errorf("%s %q pushed from the message", k, got)
			}
		}
		if got := p.header.Get("X-Ok"); got != "yes" {
			t.Errorf("X-Ok %q; want the message's yes", got)
		}
	})
	t.Run("signed", func(t *testing.T) {
		e := newEnv(t)
		rc := newReceiver(t)
		secret := writeFile(t, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		e.replica(consumerCfg(), push.Config{URL: rc.URL, SigningSecretFile: secret})
		v, err := push.NewVerifier(secret)
		if err != nil {
			t.Fatal(err)
		}
		e.publish("orders.new", "x", forged)
		p := rc.next(t, 5*time.Second)
		if got := p.header.Values("Proxy-Authorization"); len(got) != 0 {
			t.Errorf("Proxy-Authorization %q pushed from the message", got)
		}
		if got := p.header.Values("Webhook-Signature"); len(got) != 1 || v.Verify(p.header, p.body, time.Now()) != nil {
			t.Errorf("Webhook-Signature %q; want jetgate's alone, verifying", got)
		}
	})
}

// A header HTTP cannot carry, by its name or by a value, is left out of
// the push; the push goes, with the message's other headers and the other
// values of that one. Passed on, it would fail every push of the message.
func TestHeadersHTTPCannotCarryAreSkipped(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want         map[string][]string
	}{
		{"a name", "NATS/1.0\r\nX(Bad): v\r\nX-Ok: yes\r\n\r\n", map[string][]string{"X-Ok": {"yes"}}},
		{"a value", "NATS/1.0\r\nX-Two: good\r\nX-Two: a\x01b\r\nX-Ctl: \x7f\r\nX-Ok: yes\r\n\r\n",
			map[string][]string{"X-Two": {"good"}, "X-Ok": {"yes"}, "X-Ctl": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rc := newReceiver(t)
			r, _ := e.replica(consumerCfg(), push.Config{URL: rc.URL, RetryMin: 50 * time.Millisecond})
			e.rawPublish("orders.new", tc.header, "x")
			var p pushed
			select {
			case p = <-rc.got:
			case <-time.After(5 * time.Second):
				t.Fatalf("no push within 5s; the pusher's last error: %s", pushState(t, r).LastError)
			}
			for k, want := range tc.want {
				if got := p.header.Values(k); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s %q; want %q", k, got, want)
				}
			}
			for k := range p.header {
				if strings.ContainsAny(k, "()") {
					t.Errorf("pushed a header named %q", k)
				}
			}
			if string(p.body) != "x" || seqHeader(p) != 1 {
				t.Errorf("pushed seq %d, body %q; want seq 1, x", seqHeader(p), p.body)
			}
		})
	}
}
