package lease

import (
	"testing"
	"time"
)

// Shorter waits, delivery by delivery, the lesser of two timings' waits.
func TestShorterWaitsTheLesserOfEachDelivery(t *testing.T) {
	s := time.Second
	cases := []struct {
		p, q Policy
		want []time.Duration // deliveries 1..5
	}{
		{Policy{AckWait: 30 * s}, Policy{AckWait: 2 * s}, []time.Duration{2 * s, 2 * s, 2 * s, 2 * s, 2 * s}},
		{Policy{AckWait: 2 * s}, Policy{AckWait: 60 * s}, []time.Duration{2 * s, 2 * s, 2 * s, 2 * s, 2 * s}},
		{Policy{AckWait: 30 * s}, Policy{AckWait: s, BackOff: []time.Duration{s, 10 * s, 60 * s}}, []time.Duration{s, 10 * s, 30 * s, 30 * s, 30 * s}},
		{Policy{AckWait: 5 * s, BackOff: []time.Duration{5 * s, 20 * s}}, Policy{AckWait: 8 * s}, []time.Duration{5 * s, 8 * s, 8 * s, 8 * s, 8 * s}},
	}
	for i, c := range cases {
		for _, sh := range []Policy{c.p.Shorter(c.q), c.q.Shorter(c.p)} {
			for n, want := range c.want {
				if got := sh.AckWaitFor(uint64(n + 1)); got != want {
					t.Errorf("case %d, delivery %d: %v, want %v", i, n+1, got, want)
				}
			}
		}
	}
}
