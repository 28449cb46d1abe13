package replica

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/consumer"
)

// origins are the creation contexts of ds, for a span's links.
func origins(ds []*consumer.Delivery) []trace.SpanContext {
	out := make([]trace.SpanContext, len(ds))
	for i, d := range ds {
		out[i] = d.Origin
	}
	return out
}
