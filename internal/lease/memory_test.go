package lease

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// leaseBytes is the heap a table holds per live lease, with ack subjects
// of their real length, each its own string as a pulled message has it.
func leaseBytes(n int) float64 {
	subjects := make([]string, n)
	for i := range subjects {
		subjects[i] = "$JS.ACK.ORDERS.billing.1." + strconv.Itoa(1_000_000+i) + "." + strconv.Itoa(1_000_000+i) + ".1764547200000000000.12345"
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t := NewTable(30 * time.Second)
	deadline := time.Now().Add(time.Minute)
	for i, s := range subjects {
		t.Add(Lease{StreamSeq: uint64(i + 1), ConsumerSeq: uint64(i + 1), Delivered: 1, Deadline: deadline, AckSubject: s})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(t)
	// The subjects were allocated before: count their bytes as the lease's,
	// as the gateway keeps each message's ack subject for its lease.
	var subjectBytes int
	for _, s := range subjects {
		subjectBytes += roundUp(len(s))
	}
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)+int64(subjectBytes)) / float64(n)
}

// roundUp is the size class a small string's bytes take.
func roundUp(n int) int {
	for _, c := range []int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160} {
		if n <= c {
			return c
		}
	}
	return n
}

// A live lease costs the gateway at most 512 bytes (issue 11's target):
// its table entry, its place in the deadline queue and the map, and the ack
// subject it keeps.
func TestLiveLeaseMemory(t *testing.T) {
	b := leaseBytes(100_000)
	t.Logf("%.0f bytes of heap per live lease", b)
	if b > 512 {
		t.Fatalf("%.0f bytes per live lease, target at most 512", b)
	}
}

// A settled lease, kept one ack_wait for retries, costs a fraction of a
// live one: it keeps no subject, and nothing of it is a pointer.
func TestSettledLeaseMemory(t *testing.T) {
	const n = 100_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tb := NewTable(30 * time.Second)
	now := time.Now()
	deadline := now.Add(time.Minute)
	for i := range n {
		l := Lease{StreamSeq: uint64(i + 1), ConsumerSeq: uint64(i + 1), Delivered: 1, Deadline: deadline,
			AckSubject: "$JS.ACK.ORDERS.billing.1." + strconv.Itoa(i+1) + "." + strconv.Itoa(i+1) + ".1764547200000000000.12345"}
		tb.Add(l)
		if _, _, err := tb.Begin(l.Ref(), OpAck, now); err != nil {
			t.Fatal(err)
		}
		tb.Finish(l.Ref(), OpAck, true, now, Extension{})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(tb)
	b := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("%.0f bytes of heap per settled lease", b)
	if tb.Live() != 0 || len(tb.settled) != n {
		t.Fatalf("%d live and %d settled, want 0 and %d", tb.Live(), len(tb.settled), n)
	}
	if b > 160 {
		t.Fatalf("%.0f bytes per settled lease, want at most 160", b)
	}
}
