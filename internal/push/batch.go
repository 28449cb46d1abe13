package push

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/wire"
)

// pushBatch sends the jobs in one request, as many as its body has room
// for (the rest go back to the queue), and acts on the answer: a failure
// fails each message as it would fail alone; a 2xx acks each but those its
// body names as failed, which are nak'ed.
func (p *Pusher) pushBatch(ctx context.Context, js []*job) {
	if js = p.render(ctx, js); len(js) == 0 {
		return
	}
	n := len(js)
	if !p.mayGo(ctx) {
		p.flow.dropped(n) // given back as the stream ends
		return
	}
	started := time.Now()
	p.m.inFlight.Inc()
	a, failed := p.sendBatch(ctx, js, started)
	<-p.requests
	p.m.inFlight.Dec()
	p.m.duration.Observe(time.Since(started).Seconds())
	switch a.verdict {
	case ack:
		p.batchTaken(ctx, js, failed, started)
	case terminate:
		p.batchRefused(ctx, js, a)
	case retry:
		p.m.requests.retried.Add(float64(n))
		p.failed(a.err)
		for _, j := range js {
			j.retryAfter, j.last500 = a.delay, a.status == http.StatusInternalServerError
			if f, named := failed[WebhookID(j.d)]; named { // a 2xx that named each failed
				j.retryAfter = f.retryAfter
			}
			j.faulted = j.faulted || j.last500
		}
		if p.flow.failedRetryable(time.Now(), js...) {
			p.up.wentDown(a.err)
		}
	case abandoned:
		p.flow.dropped(n)
	}
}

// batchTaken settles a batch the endpoint answered with a 2xx: each message
// acked but those the answer names as failed, nak'ed.
func (p *Pusher) batchTaken(ctx context.Context, js []*job, failed map[string]failure, started time.Time) {
	n := len(js)
	own := p.flow.succeeded(started, n)
	p.up.answered()
	naks := map[time.Duration][]*consumer.Delivery{}
	ids := make(map[string]bool, len(failed))
	for _, j := range js {
		id := WebhookID(j.d)
		f, isFailed := failed[id]
		if !isFailed {
			p.toAck <- j.d
			continue
		}
		ids[id] = true
		delay := p.retryDelay(j.d.Meta.Delivered, f.retryAfter)
		naks[delay] = append(naks[delay], j.d)
	}
	p.m.requests.acked.Add(float64(n - len(ids)))
	p.m.requests.retried.Add(float64(len(ids)))
	if len(ids) > 0 {
		p.failed(fmt.Sprintf("%d of the %d messages of a batch failed (the answer's failures)", len(ids), n))
	}
	for delay, ds := range naks {
		p.settle(ctx, lease.OpNak, ds, settle.Args{Delay: delay})
	}
	p.flow.markAlone(own)   // before their naks: each goes alone next time
	for _, o := range own { // their failures were their own: the normal path
		p.settle(ctx, lease.OpNak, []*consumer.Delivery{o.d}, settle.Args{Delay: p.nakDelay(o)})
	}
}

// batchRefused terminates the messages of a batch the endpoint answered
// with a final 4xx.
func (p *Pusher) batchRefused(ctx context.Context, js []*job, a answer) {
	n := len(js)
	p.m.requests.terminated.Add(float64(n))
	if a.status != 0 {
		p.flow.answered(n)
		p.up.answered()
	} else {
		p.flow.dropped(n)
	}
	p.failed(a.err)
	ds := make([]*consumer.Delivery, n)
	for i, j := range js {
		ds[i] = j.d
	}
	p.settle(ctx, lease.OpTerm, ds, settle.Args{Reason: fmt.Sprintf("HTTP %d", a.status)})
}

// render renders the jobs' elements, terminates a message that cannot be
// rendered, drops a job whose lease the replica no longer holds (as push
// does), and returns the jobs the body has room for: up to max_bytes, at
// least one. The rest go back to the queue.
func (p *Pusher) render(ctx context.Context, js []*job) []*job {
	out := js[:0]
	var size int64 = 1 // [ and ]
	for i, j := range js {
		if !p.c.Holds(j.d) { // its lease lapsed or was voided: the server has it again
			p.flow.dropped(1)
			continue
		}
		if j.elem == nil {
			b, err := element(p.cfg.Format, j.d)
			if err != nil {
				p.m.requests.terminated.Inc()
				p.flow.dropped(1)
				p.failed("the request could not be made: " + err.Error())
				p.settle(ctx, lease.OpTerm, []*consumer.Delivery{j.d}, settle.Args{Reason: "the request could not be made"})
				continue
			}
			j.elem, j.size = b, int64(len(b))
		}
		if size+j.size+1 > p.cfg.Batch.MaxBytes && len(out) > 0 {
			p.flow.putBack(js[i:])
			return out
		}
		size += j.size + 1
		out = append(out, j)
	}
	return out
}

// mayGo takes a place for a batch request, at most concurrency at once, the
// retrier's among them, for the request to be timed and signed from when it
// goes. A batch's leases are concurrency × max_messages, so the retrier's
// batch beside the workers' made one request more than the endpoint's
// connections, and its wait for one was taken out of its timeout: a
// healthy endpoint was cut short, and the batch pushed twice. It is false
// once the pusher stops: a batch that waited is not pushed (Stop starts no
// push).
func (p *Pusher) mayGo(ctx context.Context) bool {
	select {
	case <-p.stop:
		return false
	case <-ctx.Done():
		return false
	case p.requests <- struct{}{}:
	}
	select {
	case <-p.stop: // it came as the place was taken
		<-p.requests
		return false
	default:
		return true
	}
}

// sendBatch makes the request of the jobs and reads its answer, and of a
// 2xx the failures it names. A span per batch, while tracing, links to
// each message's creation context.
func (p *Pusher) sendBatch(ctx context.Context, js []*job, now time.Time) (answer, map[string]failure) {
	if p.tracer != nil {
		var span trace.Span
		ctx, span = p.batchSpan(ctx, js)
		var a answer
		defer func() {
			if a.verdict != ack {
				span.SetStatus(codes.Error, a.err)
			}
			span.End()
		}()
		a, failed := p.sendBatchIn(ctx, js, now)
		span.SetAttributes(attribute.Int("jetgate.push.failures", len(failed)))
		return a, failed
	}
	return p.sendBatchIn(ctx, js, now)
}

func (p *Pusher) sendBatchIn(ctx context.Context, js []*job, now time.Time) (answer, map[string]failure) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	resp, err := p.rt.RoundTrip(p.batchRequest(rctx, js, now))
	var body []byte
	var readErr error
	if err == nil {
		if resp.StatusCode/100 == 2 {
			body, readErr = io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
		} else {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		}
		_ = resp.Body.Close()
	}
	a := judge(ctx, resp, err, time.Now())
	if a.verdict != ack {
		return a, nil
	}
	if readErr != nil {
		if ctx.Err() != nil {
			return answer{verdict: abandoned, err: "the pusher stopped"}, nil
		}
		return answer{verdict: retry, status: a.status, err: resp.Status + ", its body not read: " + transportError(readErr)}, nil
	}
	failed, err := failures(body)
	if err != nil {
		return answer{verdict: retry, status: a.status, err: resp.Status + " to a batch: " + err.Error()}, nil
	}
	if ids := strangers(failed, js); len(ids) > 0 {
		// As SQS's partial batch response does: the receiver meant a
		// message it did not name by its element's id, and acking the
		// batch would lose it.
		what := fmt.Sprintf("%s naming %d messages not in the batch (%s): the batch failed; name each by its element's id", resp.Status, len(ids), strings.Join(ids, ", "))
		p.log.Warn("a batch's answer names messages not in the batch; the batch failed", "ids", ids)
		return answer{verdict: retry, status: a.status, err: what}, nil
	}
	if namesEach(failed, js) {
		// Nothing taken: the endpoint's failure, as a 503's, not each
		// message's own; nak'ing each would burn a delivery a request
		// while the endpoint's backend is down.
		return answer{verdict: retry, status: a.status, err: resp.Status + " naming every message of the batch failed"}, failed
	}
	return a, failed
}

// strangers are up to 3 of the ids failed names that are not of the
// batch's messages.
func strangers(failed map[string]failure, js []*job) []string {
	ids := make(map[string]bool, len(js))
	for _, j := range js {
		ids[WebhookID(j.d)] = true
	}
	var out []string
	for id := range failed {
		if !ids[id] && len(out) < 3 {
			if len(id) > 64 { // the receiver's: bounded in the log and GetConsumer
				id = id[:64] + "…"
			}
			out = append(out, wire.ValidUTF8(id))
		}
	}
	slices.Sort(out)
	return out
}

// namesEach reports whether failed names every message of the batch.
func namesEach(failed map[string]failure, js []*job) bool {
	if len(failed) < len(js) {
		return false
	}
	for _, j := range js {
		if _, ok := failed[WebhookID(j.d)]; !ok {
			return false
		}
	}
	return true
}

// batchRequest is the request of a batch: its body, jetgate's stream and
// consumer, the batch's size, and the Standard Webhooks headers.
func (p *Pusher) batchRequest(ctx context.Context, js []*job, now time.Time) *http.Request {
	t := p.tmpl
	body := batchBody(js)
	h := make(http.Header, headerValues)
	w := headerWriter{h: h, vals: make([]string, 0, headerValues)}
	h["Content-Type"] = batchJSON
	if p.cfg.Format == FormatCloudEvents {
		h["Content-Type"] = batchCloudEvents
	}
	w.set("Jetgate-Stream", p.cfg.Stream)
	w.set("Jetgate-Consumer", p.cfg.Consumer)
	w.set("Jetgate-Batch-Size", strconv.Itoa(len(js)))
	return t.signed(ctx, &w, batchID(js), now, body)
}

// batchSpan starts the span of a batch's push, linked to each message's
// creation context; the request's CLIENT span is its child.
func (p *Pusher) batchSpan(ctx context.Context, js []*job) (context.Context, trace.Span) {
	links := make([]trace.Link, 0, len(js))
	for _, j := range js {
		if j.d.Origin.IsValid() {
			links = append(links, trace.Link{SpanContext: j.d.Origin})
		}
	}
	return p.tracer.Start(ctx, "push batch "+p.cfg.Stream, trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(links...),
		trace.WithAttributes(semconv.MessagingSystemKey.String("nats"), semconv.MessagingDestinationName(p.cfg.Stream),
			semconv.MessagingConsumerGroupName(p.cfg.Consumer), semconv.MessagingOperationName("push"),
			semconv.MessagingBatchMessageCount(len(js))))
}
