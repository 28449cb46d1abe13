package consumer

import (
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// An Extend shorter than a +WPI's wait goes as a Nak whose delay the
// server times from one ack_wait ago: the lease of the shortest wait in the
// batch comes back when the time asked ends, its margin kept, the others no
// sooner. Nothing else is shortened.
func TestShorteningAnExtend(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	plain := lease.Policy{AckWait: 20 * time.Second}
	backoff := lease.Policy{AckWait: 2 * time.Second, BackOff: []time.Duration{2 * time.Second, 10 * time.Second, time.Minute}}
	one := []token.Claims{{Delivered: 1}}
	cases := []struct {
		name   string
		op     lease.Op
		args   settle.Args
		timing lease.Policy
		cs     []token.Claims
		want   time.Duration
	}{
		{"a plain Extend", lease.OpExtend, settle.Args{}, plain, one, 0},
		{"a give-back (0s)", lease.OpExtend, settle.Args{Duration: d(0)}, plain, one, 0},
		{"the issuer's keep-alive", lease.OpExtend, settle.Args{Duration: d(time.Second), KeepAlive: true}, plain, one, 0},
		{"a Nak", lease.OpNak, settle.Args{Duration: d(time.Second)}, plain, one, 0},
		{"longer than the lease a +WPI gives", lease.OpExtend, settle.Args{Duration: d(18 * time.Second)}, plain, one, 0},
		// 20s less its 2s margin: the server redelivers at 1s + 2s.
		{"1s of a 20s wait", lease.OpExtend, settle.Args{Duration: d(time.Second)}, plain, one, 3 * time.Second},
		// The shortest is the first delivery's 2s step (250ms margin);
		// the second's comes back 8s later than asked.
		{"a backoff batch", lease.OpExtend, settle.Args{Duration: d(time.Second)}, backoff, []token.Claims{{Delivered: 2}, {Delivered: 1}}, 1250 * time.Millisecond},
		// Every lease of the batch on a 1m step: no delay the server times
		// from 2s ago makes it sooner than now; the least it takes.
		{"a long step only", lease.OpExtend, settle.Args{Duration: d(time.Second)}, backoff, []token.Claims{{Delivered: 3}}, time.Millisecond},
	}
	for _, tc := range cases {
		if got := shortening(tc.op, tc.args, tc.timing, tc.cs); got != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}
