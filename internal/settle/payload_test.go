package settle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
)

// The bodies are the ones JetStream reads on an ack subject (nats-server
// consumer.go processAck; nats.go jetstream Nak/NakWithDelay/Term/
// TermWithReason/InProgress).
func TestPayload(t *testing.T) {
	tests := []struct {
		name string
		op   lease.Op
		args settle.Args
		want string
	}{
		{"ack", lease.OpAck, settle.Args{}, "+ACK"},
		{"ack ignores args", lease.OpAck, settle.Args{Delay: time.Second, Reason: "r", Principal: "p"}, "+ACK"},
		{"nak", lease.OpNak, settle.Args{}, "-NAK"},
		{"nak with delay in nanoseconds", lease.OpNak, settle.Args{Delay: 1500 * time.Millisecond}, `-NAK {"delay":1500000000}`},
		{"nak with 1ns delay", lease.OpNak, settle.Args{Delay: 1}, `-NAK {"delay":1}`},
		{"nak with an hour's delay", lease.OpNak, settle.Args{Delay: time.Hour}, `-NAK {"delay":3600000000000}`},
		{"nak with a negative delay", lease.OpNak, settle.Args{Delay: -time.Second}, "-NAK"},
		{"nak ignores reason", lease.OpNak, settle.Args{Reason: "why"}, "-NAK"},
		{"term", lease.OpTerm, settle.Args{}, "+TERM"},
		{"term with reason", lease.OpTerm, settle.Args{Reason: "bad payload"}, "+TERM bad payload"},
		{"term with a reason to trim", lease.OpTerm, settle.Args{Reason: " \t bad payload \n"}, "+TERM bad payload"},
		{"term with a blank reason", lease.OpTerm, settle.Args{Reason: " \t\n "}, "+TERM"},
		{"term ignores delay", lease.OpTerm, settle.Args{Delay: time.Second}, "+TERM"},
		{"extend", lease.OpExtend, settle.Args{}, "+WPI"},
		{"extend ignores args", lease.OpExtend, settle.Args{Delay: time.Second, Reason: "r", Principal: "p"}, "+WPI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := settle.Payload(tt.op, tt.args); string(got) != tt.want {
				t.Errorf("Payload(%v, %+v) = %q, want %q", tt.op, tt.args, got, tt.want)
			}
		})
	}
}

func TestPayloadOfUnknownOpIsNil(t *testing.T) {
	for _, op := range []lease.Op{0, lease.OpExtend + 1, 255} {
		if got := settle.Payload(op, settle.Args{}); got != nil {
			t.Errorf("Payload(%d) = %q, want nil", op, got)
		}
	}
}

// Each call returns its own bytes: a caller may not corrupt the next one's.
func TestPayloadIsFresh(t *testing.T) {
	a := settle.Payload(lease.OpAck, settle.Args{})
	a[0] = '-'
	if got := settle.Payload(lease.OpAck, settle.Args{}); string(got) != "+ACK" {
		t.Errorf("Payload after a caller wrote into an earlier one = %q", got)
	}
}

func TestFill(t *testing.T) {
	boom := errors.New("boom")
	deadline := time.Unix(1_700_000_000, 0)
	out := []settle.Outcome{{}, {Err: errors.New("earlier")}, {NewToken: "tok", Deadline: deadline}}
	got := settle.Fill(out, boom)
	if len(got) != len(out) || &got[0] != &out[0] {
		t.Fatalf("Fill returned a different slice (len %d)", len(got))
	}
	for i, o := range out {
		if o.Err != boom {
			t.Errorf("out[%d].Err = %v, want %v", i, o.Err, boom)
		}
	}
	if out[2].NewToken != "tok" || !out[2].Deadline.Equal(deadline) {
		t.Errorf("Fill changed more than Err: %+v", out[2])
	}
	settle.Fill(out, nil)
	for i, o := range out {
		if o.Err != nil {
			t.Errorf("Fill(nil): out[%d].Err = %v", i, o.Err)
		}
	}
	if got := settle.Fill(nil, boom); len(got) != 0 {
		t.Errorf("Fill(nil) = %v", got)
	}
}
