package push

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/pull"
)

// judge turns each answer into its verdict, and a 429 or 503 keeps the
// endpoint's Retry-After (seconds or a date; 0 for one in the past).
func TestJudgeReadsEachAnswer(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	resp := func(code int, retryAfter string) *http.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: h}
	}
	tests := []struct {
		name  string
		resp  *http.Response
		want  verdict
		delay time.Duration
	}{
		{"200", resp(200, ""), ack, 0},
		{"204", resp(204, ""), ack, 0},
		{"503 with seconds", resp(503, "7"), retry, 7 * time.Second},
		{"429 with a date", resp(429, now.Add(time.Minute).Format(http.TimeFormat)), retry, time.Minute},
		{"429 with a past date", resp(429, now.Add(-time.Minute).Format(http.TimeFormat)), retry, 0},
		{"503 with 0", resp(503, "0"), retry, 0},
		{"503 with nonsense", resp(503, "soon"), retry, 0},
		{"408", resp(408, ""), retry, 0},
		{"425", resp(425, ""), retry, 0},
		{"500", resp(500, ""), retry, 0},
		{"302", resp(302, ""), retry, 0},
		{"400", resp(400, ""), terminate, 0},
		{"422", resp(422, ""), terminate, 0},
		{"404", resp(404, ""), terminate, 0},
	}
	for _, tt := range tests {
		a := judge(context.Background(), tt.resp, nil, now)
		if a.verdict != tt.want || a.delay != tt.delay || a.status != tt.resp.StatusCode {
			t.Errorf("%s: verdict %v delay %v status %d, want %v %v", tt.name, a.verdict, a.delay, a.status, tt.want, tt.delay)
		}
	}
	if a := judge(context.Background(), nil, errors.New("refused"), now); a.verdict != retry || a.status != 0 {
		t.Errorf("no answer: %+v", a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a := judge(ctx, nil, context.Canceled, now); a.verdict != abandoned {
		t.Errorf("stopped: %+v", a)
	}
}

// The Nak after a message's own failure waits min × 2^(delivered−1), or the
// endpoint's Retry-After if longer, never more than retry.max.
func TestNakDelay(t *testing.T) {
	p := &Pusher{cfg: Config{RetryMin: time.Second, RetryMax: time.Minute}}
	tests := []struct {
		delivered  uint64
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, time.Second},
		{2, 0, 2 * time.Second},
		{3, 0, 4 * time.Second},
		{4, 0, 8 * time.Second},
		{20, 0, time.Minute},
		{1, 10 * time.Second, 10 * time.Second},
		{3, time.Second, 4 * time.Second},
		{1, 24 * time.Hour, time.Minute},
	}
	for _, tt := range tests {
		j := &job{d: &consumer.Delivery{Meta: pull.Metadata{Delivered: tt.delivered}}, retryAfter: tt.retryAfter}
		if got := p.nakDelay(j); got != tt.want {
			t.Errorf("delivered %d, Retry-After %v: delay %v, want %v", tt.delivered, tt.retryAfter, got, tt.want)
		}
	}
}

// failures reads a 2xx's failures by id: none from a body that is empty,
// not an object or without them; an error for a list that cannot be read.
func TestFailuresOfABatch(t *testing.T) {
	tests := []struct {
		body string
		want map[string]failure
		err  bool
	}{
		{"", nil, false},
		{"OK", nil, false},
		{`["x"]`, nil, false},
		{`{"ok":true}`, nil, false},
		{`{"failures":[]}`, nil, false},
		{`{"failures":[{"id":"S.1","retry_after":"5s"},{"id":"S.2"},{"id":"S.3","retry_after":2.5},{"id":"S.4","retry_after":"soon"},{"id":"S.5","retry_after":"-1s"}]}`,
			map[string]failure{"S.1": {5 * time.Second}, "S.2": {}, "S.3": {2500 * time.Millisecond}, "S.4": {}, "S.5": {}}, false},
		// Longer than a day: a day, as the Retry-After header's.
		{`{"failures":[{"id":"S.1","retry_after":86401},{"id":"S.2","retry_after":"48h"},{"id":"S.3","retry_after":1e300}]}`,
			map[string]failure{"S.1": {24 * time.Hour}, "S.2": {24 * time.Hour}, "S.3": {24 * time.Hour}}, false},
		{`{"failures":[{"retry_after":"5s"}]}`, nil, true},
		{`{"failures":[{"id":""}]}`, nil, true},
		{`{"failures":"S.1"}`, nil, true},
		{`{"failures":[{"id":"S.1"}`, nil, true},
		// Over maxAnswer: its failures are read from its first maxAnswer
		// bytes, and none begun there is none at all.
		{`{"failures":[{"id":"S.1"}],"pad":"` + strings.Repeat("x", maxAnswer) + `"}`, map[string]failure{"S.1": {}}, false},
		{`{"ok":true,"results":"` + strings.Repeat("x", maxAnswer) + `"}`, nil, false},
		{`{"results":["` + strings.Repeat("x", maxAnswer/2) + `"],"failures":[{"id":"S.1"}],"pad":"` + strings.Repeat("x", maxAnswer) + `"}`, map[string]failure{"S.1": {}}, false},
		{`{"failures":[{"id":"S.1","why":"` + strings.Repeat("x", maxAnswer) + `"}]}`, nil, true},
		{`{"a":1,,"failures":[{"id":"S.1"}],"pad":"` + strings.Repeat("x", maxAnswer) + `"}`, nil, true},
		{`{}` + strings.Repeat(" ", maxAnswer), nil, false},
		// A byte order mark before the object (some serialisers write one):
		// taken for "not an object", it acked the messages named failed.
		{"\xef\xbb\xbf{\"failures\":[{\"id\":\"S.1\"}]}", map[string]failure{"S.1": {}}, false},
		{"\xef\xbb\xbf \r\n{\"failures\":[{\"id\":\"S.1\"}]}", map[string]failure{"S.1": {}}, false},
		{"{ok}", nil, true},
		// SQS's partial batch response, as a handler ported from SQS answers.
		{`{"batchItemFailures":[{"itemIdentifier":"S.1"},{"itemIdentifier":"S.2","retry_after":"5s"}]}`,
			map[string]failure{"S.1": {}, "S.2": {5 * time.Second}}, false},
		{`{"batchItemFailures":[]}`, nil, false},
		{`{"batchItemFailures":[{"itemIdentifier":""}]}`, nil, true},
		{`{"failures":[{"id":"S.1"}],"batchItemFailures":[{"itemIdentifier":"S.2"}]}`, map[string]failure{"S.1": {}, "S.2": {}}, false},
		{`{"batchItemFailures":[{"itemIdentifier":"S.1"}],"pad":"` + strings.Repeat("x", maxAnswer) + `"}`, map[string]failure{"S.1": {}}, false},
		{`{"failures":[{"id":"S.1"}],"batchItemFailures":[{"itemIdentifier":"S.2"}],"pad":"` + strings.Repeat("x", maxAnswer) + `"}`,
			map[string]failure{"S.1": {}, "S.2": {}}, false},
	}
	for _, tt := range tests {
		got, err := failures([]byte(tt.body))
		if (err != nil) != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%.60s: %v, %v; want %v (error %v)", tt.body, got, err, tt.want, tt.err)
		}
	}
}

// A failures key cut by the end of the part read ("fail|ures") is failures
// begun there: they must end there too. It was read as no failures member,
// and the batch acked whole, the messages named as failed with it.
func TestAFailuresKeyCutAtTheBoundaryFailsTheBatch(t *testing.T) {
	for _, key := range []string{`"fail`, `"batchItem`} {
		head := `{"results":"`
		tail := `","failures":[{"id":"S.1"}]}`
		if key == `"batchItem` {
			tail = `","batchItemFailures":[{"itemIdentifier":"S.1"}]}`
		}
		// the pad puts the boundary inside the key
		pad := maxAnswer - len(head) - len(`",`+key)
		body := head + strings.Repeat("x", pad) + tail + strings.Repeat(" ", 10)
		if !strings.HasSuffix(body[:maxAnswer], key) {
			t.Fatalf("the boundary is not in the key: %q", body[maxAnswer-10:maxAnswer])
		}
		got, err := failures([]byte(body)[:maxAnswer+1]) // as sendBatchIn reads it
		if err == nil && len(got) == 0 {
			t.Fatalf("failures begun in the first %d bytes, their key %s cut there: read as none (%v, %v): S.1 would be acked", maxAnswer, key, got, err)
		}
	}
}
