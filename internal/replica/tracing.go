package replica

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/settle"
)

// origins are the creation contexts of ds, for a span's links.
func origins(ds []*consumer.Delivery) []trace.SpanContext {
	out := make([]trace.SpanContext, len(ds))
	for i, d := range ds {
		out[i] = d.Origin
	}
	return out
}

// failures counts the tokens of a settle that failed; when none succeeded,
// all is the first one's error: the settle failed.
func failures(out []settle.Outcome) (n int, all error) {
	for _, o := range out {
		if o.Err != nil {
			if n++; all == nil {
				all = o.Err
			}
		}
	}
	if n < len(out) {
		all = nil
	}
	return n, all
}
