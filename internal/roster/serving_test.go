package roster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/natstest"
)

// Serving names the live replicas whose list names the consumer, and no
// other: a live replica serving another consumer is not asked for the
// leases of this one (ListLeases would wait for its answer, and name it
// missing).
func TestServingNamesOnlyTheReplicasOfTheConsumer(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	a := open(t, natstest.Connect(t, ns), "a")
	defer a.Close(ctx)
	b := open(t, natstest.Connect(t, ns), "b")
	defer b.Close(ctx)
	c := open(t, natstest.Connect(t, ns), "c")
	defer c.Close(ctx)
	aBilling := join(t, a, "ORDERS", "billing")
	aShipping := join(t, a, "ORDERS", "shipping")
	join(t, b, "ORDERS", "shipping")
	join(t, c, "ORDERS", "billing")
	natstest.Eventually(t, 5*time.Second, "a counts b on shipping and c on billing", func() bool {
		return aBilling.get() == 2 && aShipping.get() == 2
	})

	serving := func(consumer string) []string {
		ids, err := a.Serving(ctx, "ORDERS", consumer)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}
	if got := serving("shipping"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("serving shipping: %v, want [a b]", got)
	}
	if got := serving("billing"); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("serving billing: %v, want [a c]", got)
	}
	if got := serving("audit"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("serving audit, which only a may serve: %v, want [a]", got)
	}
}
