package tracing

import (
	"context"
	"testing"
)

// Off, naming a publish's message costs nothing either.
func TestR13TraceOffMessageIDAllocatesNothing(t *testing.T) {
	var off *Tracing
	allocs := testing.AllocsPerRun(100, func() {
		_, p := off.Spans().Publish(context.Background(), "ORDERS", "orders.x", 1)
		p.MessageID("ORDERS", 42)
		p.End(nil)
	})
	if allocs != 0 {
		t.Fatalf("off: %v allocations a run", allocs)
	}
}
