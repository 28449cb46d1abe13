// Command receiver is a push endpoint to try jetgate's push delivery with:
// it prints each push, checks its Standard Webhooks signature, and answers
// with the status a message's data asks for ("503" is answered 503 the first
// time, "422" is refused for good); anything else is 204. A batch (a push
// consumer's batch block) is answered 200 with the failures of the messages
// whose data asks for a status ("503" the first time, "422" every time), as
// SQS's partial batch response, or 204 when none failed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/push"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8000", "where to listen")
	secretFile := flag.String("secret-file", "", "the signing secret (whsec_...), to verify signatures")
	flag.Parse()
	verify := func(*http.Request, []byte) string { return "not checked" }
	if *secretFile != "" {
		v, err := push.NewVerifier(*secretFile)
		if err != nil {
			log.Fatal(err)
		}
		verify = func(r *http.Request, body []byte) string {
			if err := v.Verify(r.Header, body, time.Now()); err != nil {
				return "BAD: " + err.Error()
			}
			return "valid"
		}
	}
	http.Handle("/", &receiver{verify: verify, out: os.Stdout, seen: map[string]bool{}})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, "receiving on http://"+l.Addr().String())
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(l))
}

// receiver answers pushes, one message or a batch a request.
type receiver struct {
	verify func(*http.Request, []byte) string
	out    io.Writer

	mu   sync.Mutex
	seen map[string]bool // ids answered 503 once
}

// maxBody is the largest body read: a batch's push.batch.max_bytes may be
// up to 64 MiB. One cut short would fail its JSON (400) or its signature
// (401), and jetgate terminates every message of a batch answered a 4xx.
const maxBody = 64 << 20

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	id := r.Header.Get("Webhook-Id")
	if len(body) > maxBody {
		fmt.Fprintf(rc.out, "%s %s over %d bytes -> 413\n", r.Method, id, maxBody)
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	// A request not signed with the secret is not jetgate's: nothing of it
	// is taken.
	if sig := rc.verify(r, body); strings.HasPrefix(sig, "BAD") {
		fmt.Fprintf(rc.out, "%s %s signature %s -> 401\n", r.Method, id, sig)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Header.Get("Jetgate-Batch-Size") != "" {
		rc.batch(w, r, id, body)
		return
	}
	code := http.StatusNoContent
	if n, ok := rc.asked(id, body); ok {
		code = n
	}
	fmt.Fprintf(rc.out, "%s %s delivered=%s signature %s: %q -> %d\n", r.Method, id, r.Header.Get("Jetgate-Delivered"), rc.verify(r, body), body, code)
	w.WriteHeader(code)
}

// asked is the status the data asks for, if any: a 503 the first time for
// its id only.
func (rc *receiver) asked(id string, data []byte) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n < 400 || n >= 600 {
		return 0, false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	again := rc.seen[id]
	rc.seen[id] = true
	return n, n != http.StatusServiceUnavailable || !again
}

// element is one message of a batch: the json form ("data" base64,
// "metadata"), or a structured CloudEvent ("data" JSON or "data_base64",
// "jetgatedelivered").
type element struct {
	ID         string          `json:"id"`
	Data       json.RawMessage `json:"data"`
	DataBase64 []byte          `json:"data_base64"`
	Delivered  string          `json:"jetgatedelivered"`
	Metadata   struct {
		NumDelivered json.Number `json:"numDelivered"`
	} `json:"metadata"`
}

// data is the message's data as the publisher sent it.
func (e element) data(cloudEvents bool) []byte {
	switch {
	case e.DataBase64 != nil:
		return e.DataBase64
	case cloudEvents:
		return e.Data // JSON, as published
	}
	var b []byte
	if json.Unmarshal(e.Data, &b) != nil { // protojson's bytes: base64
		return e.Data
	}
	return b
}

type failure struct {
	ID string `json:"id"`
}

// batch answers a batch: 200 with the ids of the messages whose data asks
// for a status, 204 when there are none, 400 when the body is no batch.
func (rc *receiver) batch(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	var els []element
	if err := json.Unmarshal(body, &els); err != nil {
		fmt.Fprintf(rc.out, "%s batch %s: not a JSON array (%v) -> 400\n", r.Method, id, err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	cloudEvents := strings.HasPrefix(r.Header.Get("Content-Type"), "application/cloudevents-batch+json")
	var failed []failure
	lines := make([]string, 0, len(els))
	for _, e := range els {
		data := e.data(cloudEvents)
		outcome := "ok"
		if n, ok := rc.asked(e.ID, data); ok {
			failed = append(failed, failure{ID: e.ID})
			outcome = "failed (" + strconv.Itoa(n) + ")"
		}
		delivered := e.Delivered
		if delivered == "" {
			delivered = e.Metadata.NumDelivered.String()
		}
		lines = append(lines, fmt.Sprintf("  %s delivered=%s: %q -> %s", e.ID, delivered, data, outcome))
	}
	code := http.StatusNoContent
	if len(failed) > 0 {
		code = http.StatusOK
	}
	fmt.Fprintf(rc.out, "%s batch %s of %d signature %s -> %d\n%s\n", r.Method, id, len(els), rc.verify(r, body), code, strings.Join(lines, "\n"))
	if len(failed) == 0 {
		w.WriteHeader(code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string][]failure{"failures": failed})
}
