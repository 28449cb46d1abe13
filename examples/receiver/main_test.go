package main

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestMain runs main itself when asked to (RECEIVER_TEST_MAIN holds its
// arguments).
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("RECEIVER_TEST_MAIN"); ok {
		os.Args = append([]string{"receiver"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A receiver that cannot listen says why and exits, without first claiming
// to listen.
func TestBusyPortIsNotAnnounced(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RECEIVER_TEST_MAIN=--addr "+l.Addr().String())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the receiver ran on a taken port: %s", out)
	}
	if strings.Contains(string(out), "receiving on") || !strings.Contains(string(out), "address already in use") {
		t.Errorf("output %q; want the bind error alone", out)
	}
}

// A batch is answered with the failures of the messages whose data asks
// for a status, 503 the first time only, in the shape jetgate reads (the
// failures' ids); a batch that fails nothing is 204, and a body that is no
// batch 400. Both batch forms are read: json (data in base64) and
// CloudEvents (data as JSON, or data_base64).
func TestABatchIsAnsweredWithTheFailuresOfItsMessages(t *testing.T) {
	var out strings.Builder
	rc := &receiver{verify: func(*http.Request, []byte) string { return "not checked" }, out: &out, seen: map[string]bool{}}
	post := func(contentType, body string) (int, []string) {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("Jetgate-Batch-Size", "3")
		r.Header.Set("Webhook-Id", "ORDERS.1-3")
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, r)
		var a struct {
			Failures []struct {
				ID string `json:"id"`
			} `json:"failures"`
		}
		if w.Code == http.StatusOK {
			if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
				t.Fatalf("a 200 whose body is not failures: %q", w.Body)
			}
		}
		var ids []string
		for _, f := range a.Failures {
			ids = append(ids, f.ID)
		}
		return w.Code, ids
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	jsonBatch := `[{"id":"ORDERS.1","data":"` + b64("hello") + `","metadata":{"numDelivered":"1"}},` +
		`{"id":"ORDERS.2","data":"` + b64("503") + `","metadata":{"numDelivered":"1"}},` +
		`{"id":"ORDERS.3","data":"` + b64("422") + `","metadata":{"numDelivered":"1"}}]`
	if code, ids := post("application/json", jsonBatch); code != http.StatusOK || !slices.Equal(ids, []string{"ORDERS.2", "ORDERS.3"}) {
		t.Fatalf("json batch: %d %v; want 200 failing ORDERS.2 and ORDERS.3", code, ids)
	}
	if code, ids := post("application/json", jsonBatch); code != http.StatusOK || !slices.Equal(ids, []string{"ORDERS.3"}) {
		t.Fatalf("json batch again: %d %v; want 200 failing ORDERS.3 alone (503 the first time only)", code, ids)
	}
	events := `[{"id":"ORDERS.4","specversion":"1.0","data":{"n":1},"jetgatedelivered":"1"},` +
		`{"id":"ORDERS.5","specversion":"1.0","data_base64":"` + b64("hi") + `","jetgatedelivered":"2"},` +
		`{"id":"ORDERS.6","specversion":"1.0","data":422,"jetgatedelivered":"1"}]`
	if code, ids := post("application/cloudevents-batch+json", events); code != http.StatusOK || !slices.Equal(ids, []string{"ORDERS.6"}) {
		t.Fatalf("CloudEvents batch: %d %v; want 200 failing ORDERS.6", code, ids)
	}
	ok := `[{"id":"ORDERS.7","data":"` + b64("fine") + `"}]`
	if code, ids := post("application/json", ok); code != http.StatusNoContent || ids != nil {
		t.Fatalf("a batch failing nothing: %d %v; want 204", code, ids)
	}
	if code, _ := post("application/json", `{"not":"a batch"}`); code != http.StatusBadRequest {
		t.Fatalf("a body that is no batch: %d; want 400", code)
	}
	for _, want := range []string{`ORDERS.5 delivered=2: "hi" -> ok`, `ORDERS.2 delivered=1: "503" -> failed (503)`, `ORDERS.4 delivered=1: "{\"n\":1}" -> ok`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the printout lacks %q:\n%s", want, out.String())
		}
	}
}

// A request whose signature does not verify is answered 401 and taken for
// nothing: a demo that people copy must not act on what anyone posts.
func TestAnUnsignedRequestIsRefused(t *testing.T) {
	var out strings.Builder
	rc := &receiver{verify: func(*http.Request, []byte) string { return "BAD: no signature" }, out: &out, seen: map[string]bool{}}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("503"))
	r.Header.Set("Webhook-Id", "ORDERS.1")
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized || !strings.Contains(out.String(), "-> 401") || len(rc.seen) != 0 {
		t.Fatalf("status %d, printed %q, seen %v; want 401 and nothing taken", w.Code, out.String(), rc.seen)
	}
}
