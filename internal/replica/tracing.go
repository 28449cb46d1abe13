package replica

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/tracing"
)

// origins are the creation contexts of ds, for span's links (none when
// tracing is off).
func origins(span *tracing.Span, ds []*consumer.Delivery) []trace.SpanContext {
	if span == nil {
		return nil
	}
	out := make([]trace.SpanContext, len(ds))
	for i, d := range ds {
		out[i] = d.Origin
	}
	return out
}
