package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// rawPublish publishes one message as bytes on the NATS protocol itself,
// as any client may, past nats.go's own checks of header names.
func (h *harness) rawPublish(subject string, header []byte, data []byte) {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.ns.ClientURL(), "nats://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	var b bytes.Buffer
	b.WriteString("CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"protocol\":1}\r\n")
	fmt.Fprintf(&b, "HPUB %s %d %d\r\n", subject, len(header), len(header)+len(data))
	b.Write(header)
	b.Write(data)
	b.WriteString("\r\nPING\r\n")
	if _, err := c.Write(b.Bytes()); err != nil {
		h.t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	var got []byte
	for !bytes.Contains(got, []byte("PONG")) {
		n, err := c.Read(buf)
		if err != nil {
			return // the server refused the line and closed: nothing stored
		}
		got = append(got, buf[:n]...)
	}
}

// framed makes b fit the protocol's framing: no space or line break in a
// subject token, none in a header line, no colon in a header name.
func framed(b []byte, forbidden string) []byte {
	return bytes.Map(func(r rune) rune {
		if strings.ContainsRune(forbidden, r) {
			return 'x'
		}
		return r
	}, b)
}

// FuzzMessagesFromAnyNATSClient publishes a message with any bytes as its
// subject's last token, a header's name and value, between two good ones,
// straight to NATS. Fetch and Consume answer, never with an error, and
// deliver the good messages with it.
func FuzzMessagesFromAnyNATSClient(f *testing.F) {
	f.Add([]byte("\xff"), []byte("X-B"), []byte("\xfe"), []byte("bad"))
	f.Add([]byte("a"), []byte("X-\xff\x00/()"), []byte("v"), []byte{})
	f.Add([]byte("\xc3\x28"), []byte("\x80"), []byte("\xed\xa0\x80"), []byte("\xff"))
	f.Add([]byte("ok"), []byte("Nats-Msg-Id"), []byte("dup"), []byte("x"))
	f.Fuzz(func(t *testing.T, tail, hk, hv, data []byte) {
		tail = framed(tail, " \t\r\n.*>")
		hk, hv = framed(hk, " \t\r\n:"), framed(hv, "\r\n")
		if len(tail) == 0 || len(hk) == 0 || len(tail)+len(hk)+len(hv)+len(data) > 32<<10 {
			return
		}
		h := newHarness(t)
		h.publishRaw("orders.good", nil, "first")
		header := append(append(append(append([]byte("NATS/1.0\r\n"), hk...), ": "...), hv...), "\r\n\r\n"...)
		h.rawPublish("orders."+string(tail), header, data)
		h.publishRaw("orders.good", nil, "last")

		check := func(how string, list []*jetgatev1.Message, settle func(context.Context, []string) error) {
			t.Helper()
			good := 0
			for _, m := range list {
				if d := string(m.GetData()); m.GetSubject() == "orders.good" && (d == "first" || d == "last") {
					good++
				}
			}
			if good != 2 {
				t.Fatalf("%s delivered %v; want the good messages around the odd one", how, list)
			}
			var toks []string
			for _, m := range list {
				toks = append(toks, m.GetToken())
			}
			if err := settle(context.Background(), toks); err != nil {
				t.Fatalf("%s: settle: %v", how, err)
			}
		}
		ms := h.fetch(h.cons, consumer, 10, time.Second).GetMessages()
		check("Fetch", ms, func(ctx context.Context, toks []string) error {
			resp, err := h.cons.Nak(ctx, &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: toks})
			if err == nil && len(resp.GetFailures()) != 0 {
				err = fmt.Errorf("%v", resp.GetFailures())
			}
			return err
		})
		cs := h.consume(h.cons, &jetgatev1.ConsumeRequest{MaxMessages: 10})
		var got []*jetgatev1.Message
		for len(got) < len(ms) {
			more, _ := cs.next(t, 10*time.Second)
			got = append(got, more...)
		}
		check("Consume", got, func(ctx context.Context, toks []string) error {
			resp, err := h.cons.Ack(ctx, &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: toks})
			if err == nil && len(resp.GetFailures()) != 0 {
				err = fmt.Errorf("%v", resp.GetFailures())
			}
			return err
		})
	})
}
