package gateway

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// sameAsProtojson checks that the direct form of r is protojson's: the same
// JSON value (protojson varies only whitespace), read back as r.
func sameAsProtojson(t *testing.T, r *jetgatev1.FetchResponse) {
	t.Helper()
	m := newMarshaler()
	got, err := m.Marshal(r)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	want, err := m.JSONPb.Marshal(r)
	if err != nil {
		t.Fatalf("protojson: %v", err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("differs from protojson:\n got %s\nwant %s", got, want)
	}
	back := &jetgatev1.FetchResponse{}
	if err := protojson.Unmarshal(got, back); err != nil {
		t.Fatalf("protojson cannot read it back: %v", err)
	}
	if !proto.Equal(back, r) {
		t.Fatalf("read back as %v, want %v", back, r)
	}
}

func randomString(r *rand.Rand) string {
	alphabet := []string{"a", "Z", "0", ".", ">", "*", " ", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "😀", "\u2028", "\ufffd", "<", "&"}
	var sb strings.Builder
	for range r.IntN(12) {
		sb.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return sb.String()
}

func randomTimestamp(r *rand.Rand) *timestamppb.Timestamp {
	if r.IntN(5) == 0 {
		return nil
	}
	nanos := []int32{0, 1_000_000, 123_000_000, 123_456_000, 123_456_789, 999_999_999, 5_000}[r.IntN(7)]
	return &timestamppb.Timestamp{Seconds: r.Int64N(253402300799), Nanos: nanos}
}

func randomResponse(r *rand.Rand) *jetgatev1.FetchResponse {
	res := &jetgatev1.FetchResponse{EmptyReason: jetgatev1.EmptyReason(r.IntN(6))}
	if r.IntN(3) == 0 {
		res.PinId = randomString(r)
	}
	for range r.IntN(4) {
		m := &jetgatev1.Message{Token: randomString(r), Subject: randomString(r), LeaseDeadline: randomTimestamp(r)}
		if r.IntN(4) > 0 {
			m.Data = make([]byte, r.IntN(70))
			for i := range m.Data {
				m.Data[i] = byte(r.IntN(256))
			}
		}
		if r.IntN(2) == 0 {
			m.Headers = map[string]*jetgatev1.HeaderValues{}
			for range r.IntN(3) {
				hv := &jetgatev1.HeaderValues{}
				for range r.IntN(3) {
					hv.Values = append(hv.Values, randomString(r))
				}
				m.Headers[randomString(r)] = hv
			}
		}
		if r.IntN(5) > 0 {
			m.Metadata = &jetgatev1.MessageMetadata{Stream: randomString(r), Consumer: randomString(r),
				StreamSeq: r.Uint64(), ConsumerSeq: r.Uint64N(1000), NumDelivered: r.Uint64N(3), NumPending: r.Uint64(),
				Timestamp: randomTimestamp(r)}
		}
		res.Messages = append(res.Messages, m)
	}
	return res
}

// The direct form of a Fetch response is exactly protojson's, for every
// shape a response can take.
func TestFetchResponseJSONIsProtojsons(t *testing.T) {
	sameAsProtojson(t, &jetgatev1.FetchResponse{})
	sameAsProtojson(t, &jetgatev1.FetchResponse{Messages: []*jetgatev1.Message{{}}})
	now := time.Now()
	sameAsProtojson(t, &jetgatev1.FetchResponse{Messages: []*jetgatev1.Message{{
		Token: "t", Subject: "orders.eu", Data: []byte("hello"), LeaseDeadline: timestamppb.New(now),
		Headers:  map[string]*jetgatev1.HeaderValues{"b": {Values: []string{"2", "3"}}, "a": {Values: []string{"1"}}, "c": {}},
		Metadata: &jetgatev1.MessageMetadata{Stream: "ORDERS", Consumer: "billing", StreamSeq: 1 << 63, Timestamp: timestamppb.New(now)},
	}}})
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		sameAsProtojson(t, randomResponse(r))
	}
}

// A string that is not UTF-8 is protojson's to refuse, as it always was.
func TestFetchResponseJSONLeavesInvalidUTF8ToProtojson(t *testing.T) {
	r := &jetgatev1.FetchResponse{Messages: []*jetgatev1.Message{{Subject: "orders.\xff"}}}
	m := newMarshaler()
	_, got := m.Marshal(r)
	_, want := m.JSONPb.Marshal(r)
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Fatalf("error %v, want protojson's %v", got, want)
	}
}

func FuzzFetchResponseJSON(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		sameAsProtojson(t, randomResponse(rand.New(rand.NewPCG(a, b))))
	})
}

func BenchmarkFetchResponseJSON(b *testing.B) {
	res := &jetgatev1.FetchResponse{}
	now := timestamppb.Now()
	for i := range 100 {
		res.Messages = append(res.Messages, &jetgatev1.Message{
			Token: strings.Repeat("t", 120), Subject: "orders.bench", Data: make([]byte, 1024), LeaseDeadline: now,
			Headers:  map[string]*jetgatev1.HeaderValues{},
			Metadata: &jetgatev1.MessageMetadata{Stream: "ORDERS", Consumer: "billing", StreamSeq: uint64(i), ConsumerSeq: uint64(i), NumDelivered: 1, Timestamp: now},
		})
	}
	m := newMarshaler()
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Marshal(res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.JSONPb.Marshal(res); err != nil {
				b.Fatal(err)
			}
		}
	})
}
