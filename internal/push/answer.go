package push

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// verdict is what an endpoint's answer (or its silence) does to a message.
type verdict int

const (
	ack       verdict = iota // 2xx
	retry                    // a failure that may pass: Nak with the retry delay (or the endpoint's Retry-After), or hold back
	terminate                // any other 4xx: Term with "HTTP <code>"
	abandoned                // the pusher stopped while the request ran: nothing said
)

// answer is an endpoint's answer to one push.
type answer struct {
	verdict verdict
	status  int           // 0: no HTTP answer
	delay   time.Duration // 429 or 503: the endpoint's Retry-After; 0: none
	err     string        // what went wrong, for the log and GetConsumer; never a body
}

// judge reads the outcome of one request.
func judge(ctx context.Context, resp *http.Response, err error, now time.Time) answer {
	if err != nil {
		if ctx.Err() != nil {
			return answer{verdict: abandoned, err: "the pusher stopped"}
		}
		return answer{verdict: retry, err: transportError(err)}
	}
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return answer{verdict: ack, status: code}
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		// A failure like any other for holding back: an endpoint that
		// says "later" to every message is down, and its Retry-After only
		// lengthens the wait.
		d, _ := retryAfter(resp.Header.Get("Retry-After"), now)
		return answer{verdict: retry, status: code, delay: d, err: resp.Status}
	case code == http.StatusRequestTimeout || code == http.StatusTooEarly || code >= 500:
		return answer{verdict: retry, status: code, err: resp.Status}
	case code >= 300 && code < 400:
		// Not followed: a push goes only where it was configured.
		return answer{verdict: retry, status: code, err: resp.Status + " (redirects are not followed; fix push.url)"}
	case code >= 400:
		return answer{verdict: terminate, status: code, err: resp.Status}
	}
	return answer{verdict: retry, status: code, err: resp.Status}
}

// transportError says what kept a request from an answer, without the URL
// (the operator's, but not every reader's).
func transportError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return "timeout: " + err.Error()
	}
	return err.Error()
}

// retryAfter parses a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, int64(24*time.Hour/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryDelay is the delay of the Nak after a failure of a message delivered
// delivered times: min × 2^(delivered−1), at most max.
func retryDelay(minDelay, maxDelay time.Duration, delivered uint64) time.Duration {
	d := minDelay
	for i := uint64(1); i < delivered && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}
