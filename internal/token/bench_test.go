package token

import (
	"testing"
	"time"
)

func BenchmarkTokenSeal(b *testing.B) {
	kr := RandomKeyring()
	c := Claims{Issuer: NewIssuerID(), StreamSeq: 1 << 40, ConsumerSeq: 1 << 40, Delivered: 3, Deadline: time.Now()}
	for b.Loop() {
		_ = kr.Seal(c, "ORDERS", "billing", "")
	}
}

func BenchmarkTokenOpen(b *testing.B) {
	kr := RandomKeyring()
	tok := kr.Seal(Claims{Issuer: NewIssuerID(), StreamSeq: 1 << 40, ConsumerSeq: 1 << 40, Delivered: 3, Deadline: time.Now()}, "ORDERS", "billing", "")
	for b.Loop() {
		if _, err := kr.Open(tok, "ORDERS", "billing", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenSealer is one token of a Fetch's batch: the consumer and
// principal are bound once per batch.
func BenchmarkTokenSealer(b *testing.B) {
	s := RandomKeyring().Sealer("ORDERS", "billing", "")
	c := Claims{Issuer: NewIssuerID(), StreamSeq: 1 << 40, ConsumerSeq: 1 << 40, Delivered: 3, Deadline: time.Now()}
	for b.Loop() {
		_ = s.Seal(c)
	}
}
