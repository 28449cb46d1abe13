package lease

import (
	"testing"
	"time"
)

// BenchmarkLeaseCycle is one lease's life in the table: handed out, acked,
// kept for retries, swept.
func BenchmarkLeaseCycle(b *testing.B) {
	t := NewTable(30 * time.Second)
	now := time.Now()
	seq := uint64(0)
	for b.Loop() {
		seq++
		l := Lease{StreamSeq: seq, ConsumerSeq: seq, Delivered: 1, Deadline: now.Add(time.Minute), AckSubject: "x"}
		t.Add(l)
		if _, _, err := t.Begin(l.Ref(), OpAck, now); err != nil {
			b.Fatal(err)
		}
		t.Finish(l.Ref(), OpAck, true, now, Extension{})
		if seq%1024 == 0 {
			now = now.Add(time.Second)
			t.Sweep(now)
		}
	}
}
