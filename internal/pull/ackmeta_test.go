package pull

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseAckSubject(t *testing.T) {
	const ts = 1_700_000_000_123_456_789
	want := Metadata{
		Stream:      "ORDERS",
		Consumer:    "billing",
		Delivered:   3,
		StreamSeq:   1042,
		ConsumerSeq: 77,
		Timestamp:   time.Unix(0, ts),
		Pending:     9,
	}
	tests := []struct {
		name    string
		subject string
		want    Metadata
	}{
		{"9 tokens", "$JS.ACK.ORDERS.billing.3.1042.77.1700000000123456789.9", want},
		{"11 tokens with domain and account hash", "$JS.ACK.hub.ACCHASH1.ORDERS.billing.3.1042.77.1700000000123456789.9", want},
		{"11 tokens, no domain", "$JS.ACK._.ACCHASH1.ORDERS.billing.3.1042.77.1700000000123456789.9", want},
		{"12 tokens with random token", "$JS.ACK.hub.ACCHASH1.ORDERS.billing.3.1042.77.1700000000123456789.9.rAnD0m", want},
		// nats.go reads any v2 subject of at least 11 tokens; so does jetgate.
		{"13 tokens", "$JS.ACK.hub.ACCHASH1.ORDERS.billing.3.1042.77.1700000000123456789.9.rAnD0m.more", want},
		{"max values", "$JS.ACK.S.C.18446744073709551615.18446744073709551615.18446744073709551615.0.18446744073709551615", Metadata{
			Stream: "S", Consumer: "C",
			Delivered: math.MaxUint64, StreamSeq: math.MaxUint64, ConsumerSeq: math.MaxUint64,
			Timestamp: time.Unix(0, 0), Pending: math.MaxUint64,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAckSubject(tt.subject)
			if err != nil {
				t.Fatalf("ParseAckSubject(%q) = %v", tt.subject, err)
			}
			if !sameMetadata(got, tt.want) {
				t.Errorf("ParseAckSubject(%q) = %+v, want %+v", tt.subject, got, tt.want)
			}
		})
	}
}

func sameMetadata(a, b Metadata) bool {
	return a.Stream == b.Stream && a.Consumer == b.Consumer && a.StreamSeq == b.StreamSeq &&
		a.ConsumerSeq == b.ConsumerSeq && a.Delivered == b.Delivered && a.Pending == b.Pending &&
		a.Timestamp.Equal(b.Timestamp)
}

func TestParseAckSubjectRejects(t *testing.T) {
	for _, subject := range []string{
		"",
		"$JS.ACK",
		"$JS.ACK.",
		"$JS.ACK.ORDERS.billing.3.1042.77.1700000000123456789",        // 8 tokens
		"$JS.ACK.x.ORDERS.billing.3.1042.77.1700000000123456789.9",    // 10 tokens
		"$JS.ACK.ORDERS.billing.x.1042.77.1700000000123456789.9",      // delivered
		"$JS.ACK.ORDERS.billing.3.x.77.1700000000123456789.9",         // stream seq
		"$JS.ACK.ORDERS.billing.3.1042.x.1700000000123456789.9",       // consumer seq
		"$JS.ACK.ORDERS.billing.3.1042.77.x.9",                        // timestamp
		"$JS.ACK.ORDERS.billing.3.1042.77.1700000000123456789.x",      // pending
		"$JS.ACK.ORDERS.billing.-3.1042.77.1700000000123456789.9",     // negative
		"$JS.ACK.ORDERS.billing.+3.1042.77.1700000000123456789.9",     // sign
		"$JS.ACK.ORDERS.billing.0x3.1042.77.1700000000123456789.9",    // hex
		"$JS.ACK.ORDERS.billing..1042.77.1700000000123456789.9",       // empty number
		"$JS.ACK.ORDERS.billing.18446744073709551616.1.1.1.1",         // overflow
		"$JS.ACK.hub.ACC.ORDERS.billing.3.x.77.1700000000123456789.9", // 11 tokens, bad number
		"$JS.API.ORDERS.billing.3.1042.77.1700000000123456789.9",
		"$JS.ACKS.ORDERS.billing.3.1042.77.1700000000123456789.9",
		"JS.ACK.ORDERS.billing.3.1042.77.1700000000123456789.9",
		"_INBOX.abc.3.1042.77.1700000000123456789.9.1.2",
		" $JS.ACK.ORDERS.billing.3.1042.77.1700000000123456789.9",
	} {
		if md, err := ParseAckSubject(subject); !errors.Is(err, ErrNotAckSubject) {
			t.Errorf("ParseAckSubject(%q) = %+v, %v; want ErrNotAckSubject", subject, md, err)
		}
	}
}

// seqs are the numbers of a delivery that an ack subject carries.
type seqs struct{ streamSeq, consumerSeq, delivered uint64 }

func (s seqs) ackSubject(stream, consumer string) string {
	return AckSubject(stream, consumer, s.delivered, s.streamSeq, s.consumerSeq)
}

func TestAckSubjectRoundTrip(t *testing.T) {
	tests := []struct {
		stream, consumer string
		c                seqs
	}{
		{"ORDERS", "billing", seqs{streamSeq: 1042, consumerSeq: 77, delivered: 3}},
		{"S", "C", seqs{}},
		{"s-1_x", "c~2", seqs{streamSeq: math.MaxUint64, consumerSeq: math.MaxUint64, delivered: math.MaxUint64}},
	}
	for _, tt := range tests {
		subj := tt.c.ackSubject(tt.stream, tt.consumer)
		if n := strings.Count(subj, ".") + 1; n != 9 || !strings.HasPrefix(subj, "$JS.ACK.") {
			t.Errorf("ackSubject = %q, want 9 tokens under $JS.ACK.", subj)
		}
		md, err := ParseAckSubject(subj)
		if err != nil {
			t.Fatalf("ParseAckSubject(ackSubject) = %v", err)
		}
		if md.Stream != tt.stream || md.Consumer != tt.consumer || md.StreamSeq != tt.c.streamSeq ||
			md.ConsumerSeq != tt.c.consumerSeq || md.Delivered != tt.c.delivered {
			t.Errorf("ParseAckSubject(%q) = %+v, want the claims %+v of %s/%s", subj, md, tt.c, tt.stream, tt.consumer)
		}
	}
}

// TestAckSubjectOfLongForm checks that the 9-token subject rebuilt from a
// token names the same delivery as the 12-token subject it was received on.
func TestAckSubjectOfLongForm(t *testing.T) {
	recv := "$JS.ACK.hub.ACCHASH1.ORDERS.billing.3.1042.77.1700000000123456789.9.rAnD0m"
	md, err := ParseAckSubject(recv)
	if err != nil {
		t.Fatal(err)
	}
	got := AckSubject(md.Stream, md.Consumer, md.Delivered, md.StreamSeq, md.ConsumerSeq)
	if want := "$JS.ACK.ORDERS.billing.3.1042.77.0.0"; got != want {
		t.Errorf("ackSubject = %q, want %q", got, want)
	}
}

func FuzzParseAckSubject(f *testing.F) {
	for _, s := range []string{
		"",
		"$JS.ACK.",
		"$JS.ACK.ORDERS.billing.3.1042.77.1700000000123456789.9",
		"$JS.ACK.hub.ACC.ORDERS.billing.3.1042.77.1700000000123456789.9",
		"$JS.ACK.hub.ACC.ORDERS.billing.3.1042.77.1700000000123456789.9.tok",
		"$JS.ACK.x.ORDERS.billing.3.1042.77.1700000000123456789.9",
		"$JS.ACK..........",
		"$JS.ACK.a.b.18446744073709551615.18446744073709551615.18446744073709551615.18446744073709551615.18446744073709551615",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		md, err := ParseAckSubject(subject)
		if err != nil {
			if !errors.Is(err, ErrNotAckSubject) {
				t.Fatalf("ParseAckSubject = %v, want ErrNotAckSubject", err)
			}
			return
		}
		if !strings.HasPrefix(subject, "$JS.ACK.") || strings.Contains(md.Stream, ".") || strings.Contains(md.Consumer, ".") {
			t.Fatalf("ParseAckSubject(%q) = %+v", subject, md)
		}
		back, err := ParseAckSubject(AckSubject(md.Stream, md.Consumer, md.Delivered, md.StreamSeq, md.ConsumerSeq))
		if err != nil || back.Stream != md.Stream || back.Consumer != md.Consumer ||
			back.StreamSeq != md.StreamSeq || back.ConsumerSeq != md.ConsumerSeq || back.Delivered != md.Delivered {
			t.Fatalf("ackSubject of %+v reads back as %+v, %v", md, back, err)
		}
	})
}
