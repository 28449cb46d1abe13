package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/settle"
)

var testLimits = Limits{MaxBatch: 100, MaxExpires: 30 * time.Second}

func TestValidateFetch(t *testing.T) {
	dur := func(s int64, n int32) *durationpb.Duration { return &durationpb.Duration{Seconds: s, Nanos: n} }
	base := func(f func(r *jetgatev1.FetchRequest)) *jetgatev1.FetchRequest {
		r := &jetgatev1.FetchRequest{Stream: "ORDERS", Consumer: "billing"}
		f(r)
		return r
	}
	tests := []struct {
		name    string
		req     *jetgatev1.FetchRequest
		lim     Limits
		want    consumer.FetchRequest
		wantErr bool
	}{
		{"defaults", base(func(r *jetgatev1.FetchRequest) {}), testLimits,
			consumer.FetchRequest{Batch: 1, Expires: consumer.DefaultExpires}, false},
		{"batch 1", base(func(r *jetgatev1.FetchRequest) { r.Batch = 1 }), testLimits,
			consumer.FetchRequest{Batch: 1, Expires: consumer.DefaultExpires}, false},
		{"batch at max", base(func(r *jetgatev1.FetchRequest) { r.Batch = 100 }), testLimits,
			consumer.FetchRequest{Batch: 100, Expires: consumer.DefaultExpires}, false},
		{"batch above max", base(func(r *jetgatev1.FetchRequest) { r.Batch = 101 }), testLimits, consumer.FetchRequest{}, true},
		{"batch negative", base(func(r *jetgatev1.FetchRequest) { r.Batch = -1 }), testLimits, consumer.FetchRequest{}, true},
		{"batch min int32", base(func(r *jetgatev1.FetchRequest) { r.Batch = -1 << 31 }), testLimits, consumer.FetchRequest{}, true},
		{"batch max int32", base(func(r *jetgatev1.FetchRequest) { r.Batch = 1<<31 - 1 }), testLimits, consumer.FetchRequest{}, true},
		{"expires 0s returns at once", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(0, 0) }), testLimits,
			consumer.FetchRequest{Batch: 1, Expires: 0}, false},
		{"expires 1.5s", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(1, 500_000_000) }), testLimits,
			consumer.FetchRequest{Batch: 1, Expires: 1500 * time.Millisecond}, false},
		{"expires capped", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(31, 0) }), testLimits,
			consumer.FetchRequest{Batch: 1, Expires: 30 * time.Second}, false},
		{"expires largest valid Duration capped", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(315_576_000_000, 999_999_999) }), testLimits,
			consumer.FetchRequest{Batch: 1, Expires: 30 * time.Second}, false},
		{"default expires capped by a lower maximum", base(func(r *jetgatev1.FetchRequest) {}), Limits{MaxBatch: 10, MaxExpires: 2 * time.Second},
			consumer.FetchRequest{Batch: 1, Expires: 2 * time.Second}, false},
		{"expires negative", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(-1, 0) }), testLimits, consumer.FetchRequest{}, true},
		{"expires negative nanos", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(0, -1) }), testLimits, consumer.FetchRequest{}, true},
		{"expires signs differ (+s -n)", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(1, -1) }), testLimits, consumer.FetchRequest{}, true},
		{"expires signs differ (-s +n)", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(-1, 1) }), testLimits, consumer.FetchRequest{}, true},
		{"expires nanos out of range", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(0, 1_000_000_000) }), testLimits, consumer.FetchRequest{}, true},
		{"expires beyond 10000 years", base(func(r *jetgatev1.FetchRequest) { r.Expires = dur(315_576_000_001, 0) }), testLimits, consumer.FetchRequest{}, true},
		{"max_bytes set", base(func(r *jetgatev1.FetchRequest) { r.MaxBytes = proto.Int64(1 << 20) }), testLimits,
			consumer.FetchRequest{Batch: 1, Expires: consumer.DefaultExpires, MaxBytes: 1 << 20}, false},
		{"max_bytes 0", base(func(r *jetgatev1.FetchRequest) { r.MaxBytes = proto.Int64(0) }), testLimits, consumer.FetchRequest{}, true},
		{"max_bytes negative", base(func(r *jetgatev1.FetchRequest) { r.MaxBytes = proto.Int64(-1) }), testLimits, consumer.FetchRequest{}, true},
		{"no stream", base(func(r *jetgatev1.FetchRequest) { r.Stream = "" }), testLimits, consumer.FetchRequest{}, true},
		{"no consumer", base(func(r *jetgatev1.FetchRequest) { r.Consumer = "" }), testLimits, consumer.FetchRequest{}, true},
		{"stream with a dot", base(func(r *jetgatev1.FetchRequest) { r.Stream = "ORD.ERS" }), testLimits, consumer.FetchRequest{}, true},
		{"consumer wildcard", base(func(r *jetgatev1.FetchRequest) { r.Consumer = "*" }), testLimits, consumer.FetchRequest{}, true},
		{"consumer full wildcard", base(func(r *jetgatev1.FetchRequest) { r.Consumer = ">" }), testLimits, consumer.FetchRequest{}, true},
		{"stream with a slash", base(func(r *jetgatev1.FetchRequest) { r.Stream = "a/b" }), testLimits, consumer.FetchRequest{}, true},
		{"consumer with a space", base(func(r *jetgatev1.FetchRequest) { r.Consumer = "bill ing" }), testLimits, consumer.FetchRequest{}, true},
		{"stream not UTF-8", base(func(r *jetgatev1.FetchRequest) { r.Stream = "\xff" }), testLimits, consumer.FetchRequest{}, true},
		{"stream of 255 bytes", base(func(r *jetgatev1.FetchRequest) { r.Stream = strings.Repeat("s", 255) }), testLimits,
			consumer.FetchRequest{Batch: 1, Expires: consumer.DefaultExpires}, false},
		{"stream of 256 bytes", base(func(r *jetgatev1.FetchRequest) { r.Stream = strings.Repeat("s", 256) }), testLimits, consumer.FetchRequest{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := validateFetch(tt.req, tt.lim)
			if tt.wantErr {
				if !errors.Is(err, errs.ErrInvalidArgument) {
					t.Fatalf("validateFetch = %+v, %v; want errs.ErrInvalidArgument", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("validateFetch = %v", err)
			}
			if got != tt.want {
				t.Errorf("validateFetch = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// checkFetch checks what validateFetch made of req: an errs.ErrInvalidArgument, or
// a request within the limits.
func checkFetch(t *testing.T, req *jetgatev1.FetchRequest, lim Limits) {
	t.Helper()
	got, err := validateFetch(req, lim)
	if err != nil {
		if !errors.Is(err, errs.ErrInvalidArgument) {
			t.Fatalf("validateFetch(%v) = %v, want errs.ErrInvalidArgument", req, err)
		}
		return
	}
	switch {
	case got.Batch < 1 || got.Batch > lim.MaxBatch:
		t.Fatalf("validateFetch(%v) accepted batch %d, outside 1..%d", req, got.Batch, lim.MaxBatch)
	case got.Expires < 0 || got.Expires > lim.MaxExpires:
		t.Fatalf("validateFetch(%v) accepted expires %s, outside 0..%s", req, got.Expires, lim.MaxExpires)
	case got.MaxBytes < 0 || (req.MaxBytes == nil) != (got.MaxBytes == 0):
		t.Fatalf("validateFetch(%v) made max_bytes %d", req, got.MaxBytes)
	case validateNames(req.GetStream(), req.GetConsumer()) != nil:
		t.Fatalf("validateFetch(%v) accepted bad names", req)
	}
}

func FuzzValidateFetch(f *testing.F) {
	f.Add("ORDERS", "billing", int32(10), true, int64(1), int32(500_000_000), true, int64(1024))
	f.Add("ORDERS", "billing", int32(0), false, int64(0), int32(0), false, int64(0))
	f.Add("ORDERS", "billing", int32(-1), true, int64(-1), int32(1), true, int64(0))
	f.Add("ORD.ERS", "*", int32(1<<31-1), true, int64(315_576_000_000), int32(999_999_999), true, int64(-1))
	f.Add("", "", int32(-1<<31), true, int64(-315_576_000_000), int32(-999_999_999), false, int64(1))
	f.Fuzz(func(t *testing.T, stream, consumer string, batch int32, hasExpires bool, secs int64, nanos int32, hasMaxBytes bool, maxBytes int64) {
		req := &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: batch}
		if hasExpires {
			req.Expires = &durationpb.Duration{Seconds: secs, Nanos: nanos}
		}
		if hasMaxBytes {
			req.MaxBytes = proto.Int64(maxBytes)
		}
		checkFetch(t, req, testLimits)
	})
}

func FuzzDecodeFetchRequest(f *testing.F) {
	for _, s := range []string{
		`{"stream":"ORDERS","consumer":"billing","batch":10,"expires":"1.5s","maxBytes":"1024"}`,
		`{"stream":"ORDERS","consumer":"billing","batch":10,"expires":"1.5s","max_bytes":1024}`,
		`{"stream":"ORDERS","consumer":"billing"}`,
		`{"stream":"ORDERS","consumer":"billing","expires":"0s"}`,
		`{"stream":"ORDERS","consumer":"billing","expires":"-1s"}`,
		`{"stream":"ORDERS","consumer":"billing","expires":"315576000000.999999999s"}`,
		`{"stream":"ORDERS","consumer":"billing","batch":-5,"maxBytes":"0"}`,
		`{"stream":"ORDERS","consumer":"billing","batch":2147483647}`,
		`{"stream":"a.b","consumer":">"}`,
		`{}`,
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req jetgatev1.FetchRequest
		if err := protojson.Unmarshal(b, &req); err != nil {
			return
		}
		checkFetch(t, &req, testLimits)
	})
}

func TestValidateSettle(t *testing.T) {
	tokens := func(n int) []string { return make([]string, n) }
	tests := []struct {
		name    string
		req     settleRequest
		wantErr bool
	}{
		{"one token", &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing", Tokens: tokens(1)}, false},
		{"max tokens", &jetgatev1.NakRequest{Stream: "ORDERS", Consumer: "billing", Tokens: tokens(settle.MaxTokens)}, false},
		{"no tokens", &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "billing"}, true},
		{"too many tokens", &jetgatev1.TermRequest{Stream: "ORDERS", Consumer: "billing", Tokens: tokens(settle.MaxTokens + 1)}, true},
		{"no stream", &jetgatev1.ExtendRequest{Consumer: "billing", Tokens: tokens(1)}, true},
		{"no consumer", &jetgatev1.AckRequest{Stream: "ORDERS", Tokens: tokens(1)}, true},
		{"stream with a dot", &jetgatev1.AckRequest{Stream: "OR.DERS", Consumer: "billing", Tokens: tokens(1)}, true},
		{"consumer with a dot", &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "bill.ing", Tokens: tokens(1)}, true},
		{"stream wildcard", &jetgatev1.AckRequest{Stream: "*", Consumer: "billing", Tokens: tokens(1)}, true},
		{"consumer wildcard", &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "bill>", Tokens: tokens(1)}, true},
		{"consumer with a newline", &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: "bill\ning", Tokens: tokens(1)}, true},
		{"consumer with a backslash", &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: `bill\ing`, Tokens: tokens(1)}, true},
		{"consumer too long", &jetgatev1.AckRequest{Stream: "ORDERS", Consumer: strings.Repeat("c", natsname.MaxLen+1), Tokens: tokens(1)}, true},
		{"negative nak delay", &jetgatev1.NakRequest{Stream: "ORDERS", Consumer: "billing", Tokens: tokens(1), Delay: durationpb.New(-time.Second)}, true},
		{"term reason too long", &jetgatev1.TermRequest{Stream: "ORDERS", Consumer: "billing", Tokens: tokens(1), Reason: strings.Repeat("r", settle.MaxReasonLen+1)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := validateSettle(tt.req, lease.OpAck, "", testLimits)
			if tt.wantErr && !errors.Is(err, errs.ErrInvalidArgument) {
				t.Fatalf("validateSettle = %v, want errs.ErrInvalidArgument", err)
			}
			if !tt.wantErr && err != nil {
				t.Fatalf("validateSettle = %v, want nil", err)
			}
		})
	}
}

func TestValidatePublish(t *testing.T) {
	hv := func(vs ...string) *jetgatev1.HeaderValues { return &jetgatev1.HeaderValues{Values: vs} }
	pub := func(h map[string]*jetgatev1.HeaderValues) *jetgatev1.PublishRequest {
		return &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.eu", Data: []byte("x"), Headers: h}
	}
	// A header of exactly maxHeaderBytes: name, value and 4 bytes of framing.
	atLimit := strings.Repeat("v", maxHeaderBytes-len("X-Big")-4)
	tests := []struct {
		name string
		req  *jetgatev1.PublishRequest
		want error
	}{
		{"no headers", pub(nil), nil},
		{"multi-valued header", pub(map[string]*jetgatev1.HeaderValues{"X-Tag": hv("a", "b"), "X-Empty": hv("")}), nil},
		{"nil header values", pub(map[string]*jetgatev1.HeaderValues{"X-Nil": nil}), nil},
		{"headers at the size limit", pub(map[string]*jetgatev1.HeaderValues{"X-Big": hv(atLimit)}), nil},
		{"no stream", &jetgatev1.PublishRequest{Subject: "orders.eu"}, errs.ErrInvalidArgument},
		{"CR LF in msg_id", &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.eu", MsgId: "a\r\nb"}, errs.ErrInvalidArgument},
		{"LF in msg_id", &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.eu", MsgId: "a\nb"}, errs.ErrInvalidArgument},
		{"msg_id over the header limit", &jetgatev1.PublishRequest{Stream: "ORDERS", Subject: "orders.eu", MsgId: strings.Repeat("i", maxHeaderBytes)}, errs.ErrHeadersTooLarge},
		{"empty header name", pub(map[string]*jetgatev1.HeaderValues{"": hv("v")}), errs.ErrHeaderInvalid},
		{"colon in header name", pub(map[string]*jetgatev1.HeaderValues{"X:Y": hv("v")}), errs.ErrHeaderInvalid},
		{"space in header name", pub(map[string]*jetgatev1.HeaderValues{"X Y": hv("v")}), errs.ErrHeaderInvalid},
		{"tab in header name", pub(map[string]*jetgatev1.HeaderValues{"X\tY": hv("v")}), errs.ErrHeaderInvalid},
		{"newline in header name", pub(map[string]*jetgatev1.HeaderValues{"X\r\nY": hv("v")}), errs.ErrHeaderInvalid},
		{"NUL in header name", pub(map[string]*jetgatev1.HeaderValues{"X\x00Y": hv("v")}), errs.ErrHeaderInvalid},
		{"DEL in header name", pub(map[string]*jetgatev1.HeaderValues{"X\x7fY": hv("v")}), errs.ErrHeaderInvalid},
		{"non-ASCII header name", pub(map[string]*jetgatev1.HeaderValues{"X-Größe": hv("v")}), errs.ErrHeaderInvalid},
		{"CR in header value", pub(map[string]*jetgatev1.HeaderValues{"X-A": hv("ok", "a\rb")}), errs.ErrInvalidArgument},
		{"LF in header value", pub(map[string]*jetgatev1.HeaderValues{"X-A": hv("a\nb")}), errs.ErrInvalidArgument},
		{"header injection", pub(map[string]*jetgatev1.HeaderValues{"X-A": hv("v\r\nNats-Msg-Id: forged")}), errs.ErrInvalidArgument},
		{"one header over the size limit", pub(map[string]*jetgatev1.HeaderValues{"X-Big": hv(atLimit + "v")}), errs.ErrHeadersTooLarge},
		{"many headers over the size limit", pub(func() map[string]*jetgatev1.HeaderValues {
			h := map[string]*jetgatev1.HeaderValues{}
			for i := range 100 {
				h[fmt.Sprintf("X-%d", i)] = hv(strings.Repeat("v", 1000))
			}
			return h
		}()), errs.ErrHeadersTooLarge},
		{"many values over the size limit", pub(map[string]*jetgatev1.HeaderValues{"X-A": hv(make([]string, maxHeaderBytes/4)...)}), errs.ErrHeadersTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := validatePublish(tt.req)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("validatePublish = %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("validatePublish = %v", err)
			}
			if got.Stream != tt.req.Stream || got.Subject != tt.req.Subject || string(got.Data) != string(tt.req.Data) {
				t.Errorf("validatePublish = %+v, does not carry the request", got)
			}
			for k, v := range tt.req.Headers {
				if fmt.Sprint(got.Header[k]) != fmt.Sprint(v.GetValues()) {
					t.Errorf("header %q = %q, want %q", k, got.Header[k], v.GetValues())
				}
			}
		})
	}
}

func TestValidatePublishReservedHeaders(t *testing.T) {
	tests := []struct {
		name     string
		reserved bool
	}{
		{"X-Trace", false},
		{"Nats", false},
		{"NatsRollup", false},
		{"X-Nats-Rollup", false},
		{"Nats-Expected-Stream", false},
		{"Nats-Expected-Last-Msg-Id", false},
		{"Nats-Expected-Last-Sequence", false},
		{"Nats-Expected-Last-Subject-Sequence", false},
		{"Nats-Expected-Last-Subject-Sequence-Subject", false},
		{"Nats-", true},
		{"Nats-Rollup", true},
		{"nats-rollup", true},
		{"NATS-ROLLUP", true},
		{"Nats-TTL", true},
		{"Nats-Msg-Id", true},
		{"nats-msg-id", true},
		{"Nats-Schedule", true},
		{"Nats-Incr", true},
		{"Nats-Batch-Id", true},
		{"Nats-Expected-", true},
		{"nats-expected-last-sequence", true}, // the server would not read it
		{"NATS-EXPECTED-STREAM", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &jetgatev1.PublishRequest{
				Stream: "ORDERS", Subject: "orders.eu",
				Headers: map[string]*jetgatev1.HeaderValues{"X-Ok": {Values: []string{"1"}}, tt.name: {Values: []string{"1"}}},
			}
			_, err := validatePublish(req)
			if !tt.reserved {
				if err != nil {
					t.Fatalf("validatePublish = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, errs.ErrHeaderReserved) || errors.Is(err, errs.ErrInvalidArgument) {
				t.Fatalf("validatePublish = %v, want errs.ErrHeaderReserved alone", err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tt.name)) {
				t.Errorf("%q does not name the header", err)
			}
		})
	}
}

func TestValidatePublishCarriesMsgIDAndCopiesHeaders(t *testing.T) {
	vals := []string{"a", "b"}
	req := &jetgatev1.PublishRequest{
		Stream: "ORDERS", Subject: "orders.eu", MsgId: "id-1",
		Headers: map[string]*jetgatev1.HeaderValues{"X-Tag": {Values: vals}},
	}
	got, err := validatePublish(req)
	if err != nil {
		t.Fatal(err)
	}
	if got.MsgID != "id-1" {
		t.Errorf("MsgID = %q, want id-1", got.MsgID)
	}
	vals[0] = "changed"
	if got.Header["X-Tag"][0] != "a" {
		t.Errorf("the validated headers share the request's slice")
	}
}

func TestToStatus(t *testing.T) {
	const secret = "nats: $JS.API.CONSUMER.MSG.NEXT.ORDERS.billing timeout at 10.0.0.7:4222"
	tests := []struct {
		err       error
		code      codes.Code
		reason    string
		showsText bool // the error's own text is shown, not a fixed message
	}{
		{errs.ErrInvalidArgument, codes.InvalidArgument, "INVALID_ARGUMENT", true},
		{errs.ErrConsumerNotFound, codes.NotFound, "CONSUMER_NOT_FOUND", true},
		{errs.ErrStreamNotFound, codes.NotFound, "STREAM_NOT_FOUND", true},
		{errs.ErrSubjectNotAllowed, codes.InvalidArgument, "SUBJECT_NOT_ALLOWED", true},
		{errs.ErrHeaderReserved, codes.InvalidArgument, "HEADER_RESERVED", true},
		{errs.ErrTokenInvalid, codes.InvalidArgument, "TOKEN_INVALID", false},
		{errs.ErrTokenWrongConsumer, codes.InvalidArgument, "TOKEN_WRONG_CONSUMER", false},
		{errs.ErrLeaseExpired, codes.FailedPrecondition, "LEASE_EXPIRED", false},
		{errs.ErrLeaseSettled, codes.FailedPrecondition, "LEASE_SETTLED", false},
		{errs.ErrSettleInProgress, codes.Aborted, "SETTLE_IN_PROGRESS", false},
		{errs.ErrUnavailable, codes.Unavailable, "NATS_UNAVAILABLE", false},
		{errs.ErrPullRefused, codes.FailedPrecondition, "PULL_REFUSED", false},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "DEADLINE_EXCEEDED", false},
		{fmt.Errorf("%w: the caller read nothing for 30s", errs.CallerSilent), codes.DeadlineExceeded, "DEADLINE_EXCEEDED", true},
		{context.Canceled, codes.Canceled, "CANCELED", false},
		{errors.New(secret), codes.Internal, "INTERNAL", false},
		{fmt.Errorf("settle: %w", errors.New(secret)), codes.Internal, "INTERNAL", false},
	}
	for _, tt := range tests {
		errs := []error{tt.err}
		if !tt.showsText {
			// Wrapped with internal detail, which the fixed message hides.
			errs = append(errs, fmt.Errorf("ack ORDERS: %w (%s)", tt.err, secret))
		}
		for _, err := range errs {
			t.Run(err.Error(), func(t *testing.T) {
				st, ok := status.FromError(toStatus(err))
				if !ok {
					t.Fatalf("toStatus(%v) is not a status", err)
				}
				if st.Code() != tt.code {
					t.Errorf("code = %s, want %s", st.Code(), tt.code)
				}
				info := errorInfo(st)
				if info == nil || info.GetReason() != tt.reason || info.GetDomain() != errorDomain {
					t.Errorf("ErrorInfo = %v, want reason %s domain %s", info, tt.reason, errorDomain)
				}
				switch {
				case tt.showsText && st.Message() != err.Error():
					t.Errorf("message = %q, want the error's text %q", st.Message(), err.Error())
				case !tt.showsText && strings.Contains(st.Message(), "10.0.0.7"):
					t.Errorf("message %q leaks the error's text", st.Message())
				case st.Message() == "":
					t.Errorf("empty message")
				}
			})
		}
	}
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

func TestToStatusPassesThrough(t *testing.T) {
	if err := toStatus(nil); err != nil {
		t.Errorf("toStatus(nil) = %v", err)
	}
	in := status.Error(codes.PermissionDenied, "no")
	if got := toStatus(in); got != in {
		t.Errorf("toStatus(status error) = %v, want it unchanged", got)
	}
	// A canceled caller wins over what the error wrapped on the way.
	if got := status.Code(toStatus(fmt.Errorf("fetch: %w", context.Canceled))); got != codes.Canceled {
		t.Errorf("wrapped context.Canceled = %s, want Canceled", got)
	}
}

// TestReasonsRoundTrip checks that every domain error has one reason, that
// a per-token failure forwarded between replicas by its reason comes back as
// the same error, and that failureOf reports the reason with the code.
func TestReasonsRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range kinds {
		reason := errs.Reason(k.err)
		if reason == errs.ReasonInternal || seen[reason] {
			t.Errorf("%v: reason %s is internal or used twice", k.err, reason)
		}
		seen[reason] = true
		wrapped := fmt.Errorf("x: %w", k.err)
		if got := errs.FromReason(errs.Reason(wrapped)); got != k.err {
			t.Errorf("FromReason(Reason(%v)) = %v, want %v", wrapped, got, k.err)
		}
		code, r, _ := failureOf(wrapped)
		if code != k.code || r != reason {
			t.Errorf("failureOf(%v) = %s %s, want %s %s", wrapped, code, r, k.code, reason)
		}
	}
	if errs.Reason(nil) != "" || errs.FromReason("") != nil {
		t.Error("no error does not round-trip as no reason")
	}
	if code, reason, msg := failureOf(errors.New("secret detail")); code != codes.Internal || reason != "INTERNAL" || strings.Contains(msg, "secret") {
		t.Errorf("failureOf(unknown) = %s %s %q", code, reason, msg)
	}
}

// An atomic batch of 1000 messages, the server's most, is taken; 1001 is not.
func TestValidatePublishBatchBound(t *testing.T) {
	batch := func(n int) *jetgatev1.PublishBatchRequest {
		req := &jetgatev1.PublishBatchRequest{Stream: "ORDERS"}
		for range n {
			req.Messages = append(req.Messages, &jetgatev1.BatchMessage{Subject: "orders.eu"})
		}
		return req
	}
	if _, err := validatePublishBatch(batch(1000)); err != nil {
		t.Fatalf("a batch of 1000: %v", err)
	}
	if _, err := validatePublishBatch(batch(1001)); !errors.Is(err, errs.ErrInvalidArgument) {
		t.Fatalf("a batch of 1001: %v", err)
	}
}
