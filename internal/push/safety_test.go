package push

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

// The push block's bounds: retry.max may equal retry.min, a URL may not
// have a fragment, a signing secret needs 24 bytes.
func TestConfigBounds(t *testing.T) {
	base := Config{Stream: "ORDERS", Consumer: "shipping", URL: "http://example.test/hook"}
	ok := func(c Config) error { return c.WithDefaults().check() }
	same := base
	same.RetryMin, same.RetryMax = time.Second, time.Second
	if err := ok(same); err != nil {
		t.Errorf("retry.max == retry.min refused: %v", err)
	}
	less := base
	less.RetryMin, less.RetryMax = 2*time.Second, time.Second
	if err := ok(less); err == nil || !strings.Contains(err.Error(), "retry.max") {
		t.Errorf("retry.max < retry.min: %v", err)
	}
	frag := base
	frag.URL = "http://example.test/hook#part"
	if err := ok(frag); err == nil || !strings.Contains(err.Error(), "fragment") {
		t.Errorf("a URL with a fragment: %v", err)
	}
	for n, want := range map[int]bool{23: false, 24: true, 32: true} {
		_, err := signingKey("whsec_" + base64.StdEncoding.EncodeToString(make([]byte, n)))
		if (err == nil) != want {
			t.Errorf("a secret of %d bytes: %v", n, err)
		}
	}
}

// A message's own Authorization, Jetgate-* and Ce-* headers are not pushed,
// nor the same names with "_" for "-": a publisher's credential must not
// reach the endpoint, and those names are jetgate's to set.
func TestCopyHeadersKeepsCredentialsAndReservedNamesOut(t *testing.T) {
	d := &consumer.Delivery{Header: map[string][]string{
		"Authorization": {"Bearer stolen"}, "Ce-Id": {"forged"}, "Ce-Type": {"forged"},
		"Jetgate-Stream": {"forged"}, "Cookie": {"c"}, "X-Kept": {"yes"},
		// Read as their dashed names by CGI and many proxies.
		"Jetgate_Stream": {"forged"}, "webhook_id": {"forged"}, "Ce_id": {"forged"}, "Proxy_Authorization": {"x"},
	}}
	h := http.Header{}
	copyHeaders(h, d)
	if len(h) != 1 || h.Get("X-Kept") != "yes" {
		t.Fatalf("pushed headers %v; want X-Kept alone", h)
	}
}

// A success resets the delay of the next try to retry.min.
func TestASuccessResetsTheDelay(t *testing.T) {
	f, js := heldBack()
	for range 3 { // the probe failing again: its delay grows
		j, _, _ := f.retryDue()
		f.take(j)
		f.failedRetryable(time.Now(), j)
	}
	if f.delay != 8*time.Millisecond {
		t.Fatalf("held back, the delay after three failed probes is %v, want 8ms", f.delay)
	}
	j, _, _ := f.retryDue()
	f.take(j)
	f.succeeded(time.Now(), 1)
	if f.delay != time.Millisecond {
		t.Fatalf("after a success the delay is %v, want retry.min", f.delay)
	}
	_ = js
}

// Only a failure before a success started is the message's own (nak'ed);
// one that failed after it started stays for a verdict.
func TestOnlyFailuresBeforeASuccessAreOwn(t *testing.T) {
	f, js := newFlow(time.Millisecond, time.Second), jobs(3)
	for _, j := range js {
		f.add(j)
	}
	a, b, c := f.next(), f.next(), f.next()
	f.failedRetryable(time.Now(), a)
	started := time.Now()
	f.failedRetryable(started.Add(time.Millisecond), b)
	own := f.succeeded(started, 1)
	if len(own) != 1 || own[0] != a {
		t.Fatalf("own failures %v, want the one before the success", own)
	}
	if len(f.failed) != 1 || f.failed[0] != b {
		t.Fatalf("kept %v, want the one after", f.failed)
	}
	_ = c
}
