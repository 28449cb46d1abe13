package server

import (
	"testing"
	"time"
)

func BenchmarkTokenSeal(b *testing.B) {
	kr := RandomKeyring()
	c := claims{issuer: NewGatewayID(), streamSeq: 1 << 40, consumerSeq: 1 << 40, delivered: 3, deadline: time.Now()}
	for b.Loop() {
		_ = kr.seal(c, "ORDERS", "billing", "")
	}
}

func BenchmarkTokenOpen(b *testing.B) {
	kr := RandomKeyring()
	tok := kr.seal(claims{issuer: NewGatewayID(), streamSeq: 1 << 40, consumerSeq: 1 << 40, delivered: 3, deadline: time.Now()}, "ORDERS", "billing", "")
	for b.Loop() {
		if _, err := kr.open(tok, "ORDERS", "billing", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLeaseCycle is one lease's life in the table: handed out, acked,
// kept for retries, swept.
func BenchmarkLeaseCycle(b *testing.B) {
	t := newLeaseTable(30 * time.Second)
	now := time.Now()
	seq := uint64(0)
	for b.Loop() {
		seq++
		c := claims{streamSeq: seq, consumerSeq: seq, delivered: 1, deadline: now.Add(time.Minute)}
		t.add(&lease{streamSeq: seq, consumerSeq: seq, delivered: 1, deadline: c.deadline, ackSubject: "x"})
		if _, err := t.begin(c, OpAck, now); err != nil {
			b.Fatal(err)
		}
		t.finish(c, OpAck, true, now, time.Time{})
		if seq%1024 == 0 {
			now = now.Add(time.Second)
			t.sweep(now)
		}
	}
}
