// Command receiver is a push endpoint to try jetgate's push delivery with:
// it prints each push, checks its Standard Webhooks signature, and answers
// with the status a message's data asks for ("503" is answered 503 the first
// time, "422" is refused for good); anything else is 204.
package main

import (
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
	var mu sync.Mutex
	seen := map[string]bool{}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		id := r.Header.Get("Webhook-Id")
		code := http.StatusNoContent
		if n, err := strconv.Atoi(strings.TrimSpace(string(body))); err == nil && n >= 400 && n < 600 {
			mu.Lock()
			if n != http.StatusServiceUnavailable || !seen[id] {
				code = n
			}
			seen[id] = true
			mu.Unlock()
		}
		fmt.Printf("%s %s delivered=%s signature %s: %q -> %d\n", r.Method, id, r.Header.Get("Jetgate-Delivered"), verify(r, body), body, code)
		w.WriteHeader(code)
	})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, "receiving on http://"+l.Addr().String())
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(l))
}
