package server

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
			got, err := parseAckSubject(tt.subject)
			if err != nil {
				t.Fatalf("parseAckSubject(%q) = %v", tt.subject, err)
			}
			if !sameMetadata(got, tt.want) {
				t.Errorf("parseAckSubject(%q) = %+v, want %+v", tt.subject, got, tt.want)
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
		if md, err := parseAckSubject(subject); !errors.Is(err, errNotAckSubject) {
			t.Errorf("parseAckSubject(%q) = %+v, %v; want errNotAckSubject", subject, md, err)
		}
	}
}

func TestAckSubjectRoundTrip(t *testing.T) {
	tests := []struct {
		stream, consumer string
		c                claims
	}{
		{"ORDERS", "billing", claims{streamSeq: 1042, consumerSeq: 77, delivered: 3}},
		{"S", "C", claims{}},
		{"s-1_x", "c~2", claims{streamSeq: math.MaxUint64, consumerSeq: math.MaxUint64, delivered: math.MaxUint64}},
	}
	for _, tt := range tests {
		subj := ackSubject(tt.stream, tt.consumer, tt.c)
		if n := strings.Count(subj, ".") + 1; n != 9 || !strings.HasPrefix(subj, "$JS.ACK.") {
			t.Errorf("ackSubject = %q, want 9 tokens under $JS.ACK.", subj)
		}
		md, err := parseAckSubject(subj)
		if err != nil {
			t.Fatalf("parseAckSubject(ackSubject) = %v", err)
		}
		if md.Stream != tt.stream || md.Consumer != tt.consumer || md.StreamSeq != tt.c.streamSeq ||
			md.ConsumerSeq != tt.c.consumerSeq || md.Delivered != tt.c.delivered {
			t.Errorf("parseAckSubject(%q) = %+v, want the claims %+v of %s/%s", subj, md, tt.c, tt.stream, tt.consumer)
		}
	}
}

// TestAckSubjectOfLongForm checks that the 9-token subject rebuilt from a
// token names the same delivery as the 12-token subject it was received on.
func TestAckSubjectOfLongForm(t *testing.T) {
	recv := "$JS.ACK.hub.ACCHASH1.ORDERS.billing.3.1042.77.1700000000123456789.9.rAnD0m"
	md, err := parseAckSubject(recv)
	if err != nil {
		t.Fatal(err)
	}
	got := ackSubject(md.Stream, md.Consumer, claims{streamSeq: md.StreamSeq, consumerSeq: md.ConsumerSeq, delivered: md.Delivered})
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
		md, err := parseAckSubject(subject)
		if err != nil {
			if !errors.Is(err, errNotAckSubject) {
				t.Fatalf("parseAckSubject = %v, want errNotAckSubject", err)
			}
			return
		}
		if !strings.HasPrefix(subject, "$JS.ACK.") || strings.Contains(md.Stream, ".") || strings.Contains(md.Consumer, ".") {
			t.Fatalf("parseAckSubject(%q) = %+v", subject, md)
		}
		c := claims{streamSeq: md.StreamSeq, consumerSeq: md.ConsumerSeq, delivered: md.Delivered}
		back, err := parseAckSubject(ackSubject(md.Stream, md.Consumer, c))
		if err != nil || back.Stream != md.Stream || back.Consumer != md.Consumer ||
			back.StreamSeq != md.StreamSeq || back.ConsumerSeq != md.ConsumerSeq || back.Delivered != md.Delivered {
			t.Fatalf("ackSubject of %+v reads back as %+v, %v", md, back, err)
		}
	})
}

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		pattern, subject string
		want             bool
	}{
		{"orders", "orders", true},
		{"orders", "order", false},
		{"orders", "orders.eu", false},
		{"orders.eu", "orders", false},
		{"orders.eu", "orders.eu", true},
		{"orders.eu", "orders.us", false},
		{"orders.*", "orders.eu", true},
		{"orders.*", "orders", false},
		{"orders.*", "orders.eu.paris", false},
		{"*.eu", "orders.eu", true},
		{"*.eu", "orders.us", false},
		{"*", "orders", true},
		{"*", "orders.eu", false},
		{"orders.*.paris", "orders.eu.paris", true},
		{"orders.*.paris", "orders.eu.lyon", false},
		{"orders.>", "orders.eu", true},
		{"orders.>", "orders.eu.paris", true},
		{"orders.>", "orders", false},
		{"orders.>", "payments.eu", false},
		{">", "orders", true},
		{">", "orders.eu.paris", true},
		{"*.>", "orders", false},
		{"*.>", "orders.eu", true},
		{"orders.eu.>", "orders.eu", false},
		{"ord*", "orders", false},
		{"ord*", "ord*", true},
		{"orders.>x", "orders.eu", false},
	}
	for _, tt := range tests {
		if got := subjectMatches(tt.pattern, tt.subject); got != tt.want {
			t.Errorf("subjectMatches(%q, %q) = %t, want %t", tt.pattern, tt.subject, got, tt.want)
		}
	}
}

func TestValidSubject(t *testing.T) {
	tests := []struct {
		subject string
		want    error
	}{
		{"orders", nil},
		{"orders.eu.paris", nil},
		{"orders-1.eu_2", nil},
		{"a.$b", nil},
		{"$JS.API.STREAM.DELETE.ORDERS", ErrSubjectNotAllowed},
		{"$SYS.REQ", ErrSubjectNotAllowed},
		{"$", ErrSubjectNotAllowed},
		{"", ErrInvalidArgument},
		{"orders.*", ErrInvalidArgument},
		{"orders.>", ErrInvalidArgument},
		{"*", ErrInvalidArgument},
		{">", ErrInvalidArgument},
		{"ord*ers", ErrInvalidArgument},
		{"orders eu", ErrInvalidArgument},
		{"orders\teu", ErrInvalidArgument},
		{"orders\r\nPUB x 1", ErrInvalidArgument},
		{"orders\n", ErrInvalidArgument},
		{" orders", ErrInvalidArgument},
		{".orders", ErrInvalidArgument},
		{"orders.", ErrInvalidArgument},
		{"orders..eu", ErrInvalidArgument},
		{".", ErrInvalidArgument},
	}
	for _, tt := range tests {
		err := validSubject(tt.subject)
		if tt.want == nil {
			if err != nil {
				t.Errorf("validSubject(%q) = %v, want nil", tt.subject, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("validSubject(%q) = %v, want %v", tt.subject, err, tt.want)
		}
		if tt.want == ErrSubjectNotAllowed && errors.Is(err, ErrInvalidArgument) {
			t.Errorf("validSubject(%q) = %v, is both ErrSubjectNotAllowed and ErrInvalidArgument", tt.subject, err)
		}
	}
}
