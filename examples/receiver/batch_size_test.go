package main

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// jetgate's push.batch.max_bytes goes up to 64 MiB; the example receiver
// reads such a batch, rather than cut it at 8 MiB and answer 4xx (which
// jetgate takes as Term for every message of the batch: all dead-lettered).
func TestABatchOver8MiBIsRead(t *testing.T) {
	var out strings.Builder
	rc := &receiver{verify: func(*http.Request, []byte) string { return "not checked" }, out: &out, seen: map[string]bool{}}
	data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 1<<20)))
	var b strings.Builder
	b.WriteString("[")
	for i := range 12 { // ~16 MiB of JSON
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id":"ORDERS.` + string(rune('a'+i)) + `","data":"` + data + `","metadata":{"numDelivered":"1"}}`)
	}
	b.WriteString("]")
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(b.String()))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Jetgate-Batch-Size", "12")
	r.Header.Set("Webhook-Id", "ORDERS.1-12.0000000000000000")
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, r)
	if w.Code/100 == 4 {
		t.Fatalf("a %d-byte batch (max_bytes allows 64 MiB) answered %d: jetgate terminates every message of it\n%s", b.Len(), w.Code, out.String())
	}
}
