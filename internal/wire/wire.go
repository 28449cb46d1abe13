// Package wire turns deliveries into the API's messages, for every face that
// sends them: gRPC and REST responses, and push requests.
package wire

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/consumer"
)

// wire is one message as the API sends it, in one allocation: a Fetch of
// 100 messages allocates its messages, their metadata and timestamps once,
// not 400 times.
type wire struct {
	m            jetgatev1.Message
	md           jetgatev1.MessageMetadata
	deadline, ts timestamppb.Timestamp
}

// Messages turns deliveries into the API's messages. A delivery whose
// subject or headers are not UTF-8 keeps their exact bytes in Raw.
func Messages(ds []*consumer.Delivery) []*jetgatev1.Message {
	if len(ds) == 0 {
		return nil
	}
	ws := make([]wire, len(ds))
	out := make([]*jetgatev1.Message, len(ds))
	for i, d := range ds {
		w := &ws[i]
		setTimestamp(&w.deadline, d.Deadline)
		setTimestamp(&w.ts, d.Meta.Timestamp)
		w.md.Stream, w.md.Consumer = d.Meta.Stream, d.Meta.Consumer
		w.md.StreamSeq, w.md.ConsumerSeq = d.Meta.StreamSeq, d.Meta.ConsumerSeq
		w.md.NumDelivered, w.md.NumPending = d.Meta.Delivered, d.Meta.Pending
		w.md.Timestamp = &w.ts
		w.m.Token, w.m.Subject, w.m.Data = d.Token, d.Subject, d.Data
		w.m.LeaseDeadline, w.m.Metadata = &w.deadline, &w.md
		if !d.UTF8() {
			setInvalid(&w.m, d.Subject, d.Header)
		} else if len(d.Header) > 0 {
			w.m.Headers = make(map[string]*jetgatev1.HeaderValues, len(d.Header))
			for k, vs := range d.Header {
				w.m.Headers[k] = &jetgatev1.HeaderValues{Values: vs}
			}
		}
		out[i] = &w.m
	}
	return out
}

// setTimestamp sets ts to t, as timestamppb.New does.
func setTimestamp(ts *timestamppb.Timestamp, t time.Time) {
	ts.Seconds, ts.Nanos = t.Unix(), int32(t.Nanosecond())
}
