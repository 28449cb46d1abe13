package server

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/wire"
)

// lister is what the listing RPCs need of the replica (DESIGN section 16).
type lister interface {
	Streams(ctx context.Context, visible replica.Visible) ([]replica.StreamSummary, error)
	Consumers(ctx context.Context, stream string, visible replica.Visible) ([]replica.ConsumerSummary, error)
	Leases(ctx context.Context, stream, name string) (replica.LeaseReport, error)
	DeadLetters(ctx context.Context, stream, name string, from uint64, n int) (replica.DeadLetterPage, error)
}

// Page sizes of ListDeadLetters.
const (
	defaultDeadLetterPage = 20
	maxDeadLetterPage     = 100
)

func (s *streamService) ListStreams(ctx context.Context, _ *jetgatev1.ListStreamsRequest) (*jetgatev1.ListStreamsResponse, error) {
	ss, err := s.list.Streams(ctx, visibleTo(ctx))
	if err != nil {
		return nil, s.status(err)
	}
	out := &jetgatev1.ListStreamsResponse{Streams: make([]*jetgatev1.StreamSummary, len(ss))}
	for i, st := range ss {
		out.Streams[i] = &jetgatev1.StreamSummary{
			Name: st.Info.Config.Name, Subjects: st.Info.Config.Subjects,
			Messages: st.Info.State.Msgs, Bytes: st.Info.State.Bytes,
			FirstSeq: st.Info.State.FirstSeq, LastSeq: st.Info.State.LastSeq,
			Consumers: int32(st.Consumers),
		}
	}
	return out, nil
}

func (s *consumerService) ListConsumers(ctx context.Context, req *jetgatev1.ListConsumersRequest) (*jetgatev1.ListConsumersResponse, error) {
	if err := natsname.Check("stream", req.GetStream()); err != nil {
		return nil, s.status(fmt.Errorf("%w: %w", errs.ErrInvalidArgument, err))
	}
	cs, err := s.list.Consumers(ctx, req.GetStream(), visibleTo(ctx))
	if err != nil {
		return nil, s.status(err)
	}
	out := &jetgatev1.ListConsumersResponse{Consumers: make([]*jetgatev1.ConsumerSummary, len(cs))}
	for i, c := range cs {
		ci := c.Info
		sum := &jetgatev1.ConsumerSummary{
			Name: ci.Name, NumPending: ci.NumPending, NumAckPending: int64(ci.NumAckPending),
			NumRedelivered: int64(ci.NumRedelivered), NumWaiting: int64(ci.NumWaiting),
			OldestUnackedAge: durationpb.New(c.OldestUnackedAge), Paused: ci.Paused,
			DeadLetters: c.DeadLetters, DeadLetterConfigured: c.DeadLetter, Pushed: c.Pushed,
			GatewayLeases: int64(c.GatewayLeases), PriorityGroups: ci.Config.PriorityGroups,
			CreatedBy: ci.Config.Metadata[coreconsumer.CreatedBy],
		}
		switch {
		case ci.Paused && ci.Config.PauseUntil != nil && !ci.Config.PauseUntil.IsZero():
			sum.PauseUntil = timestamppb.New(*ci.Config.PauseUntil) // the time set, as GetConsumer shows it
		case ci.Paused:
			sum.PauseUntil = timestamppb.New(time.Now().Add(ci.PauseRemaining))
		}
		out.Consumers[i] = sum
	}
	return out, nil
}

func (s *consumerService) ListLeases(ctx context.Context, req *jetgatev1.ListLeasesRequest) (*jetgatev1.ListLeasesResponse, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return nil, s.status(err)
	}
	rep, err := s.list.Leases(ctx, req.GetStream(), req.GetConsumer())
	if err != nil {
		return nil, s.status(err)
	}
	now := time.Now()
	out := &jetgatev1.ListLeasesResponse{Replicas: rep.Replicas, MissingReplicas: rep.Missing}
	for _, h := range rep.Holders {
		out.Holders = append(out.Holders, &jetgatev1.LeaseHolder{
			Principal: h.Principal, Leases: int64(h.Leases), Replicas: h.Replicas,
			OldestSince: timestamppb.New(h.Oldest), OldestAge: durationpb.New(max(now.Sub(h.Oldest), 0)),
			LatestDeadline: timestamppb.New(h.Latest), Kept: int64(h.Kept),
		})
	}
	return out, nil
}

func (s *consumerService) ListDeadLetters(ctx context.Context, req *jetgatev1.ListDeadLettersRequest) (*jetgatev1.ListDeadLettersResponse, error) {
	from, n, err := validateDeadLetterPage(req)
	if err != nil {
		return nil, s.status(err)
	}
	page, err := s.list.DeadLetters(ctx, req.GetStream(), req.GetConsumer(), from, n)
	if err != nil {
		return nil, s.status(err)
	}
	out := &jetgatev1.ListDeadLettersResponse{Total: page.Total, DeadLetters: make([]*jetgatev1.DeadLetter, len(page.Letters))}
	if page.Next != 0 {
		out.NextPageToken = strconv.FormatUint(page.Next, 10)
	}
	for i, l := range page.Letters {
		dl := &jetgatev1.DeadLetter{
			Seq: l.Seq, Subject: wire.ValidUTF8(l.Header.Get(deadletter.HeaderSubject)), DataPreview: l.Preview, DataSize: int64(l.Size),
			Time: timestamppb.New(l.Time), Reason: wire.ValidUTF8(l.Header.Get(deadletter.HeaderReason)),
			Headers: make(map[string]*jetgatev1.HeaderValues, len(l.Header)),
		}
		dl.StreamSeq, _ = strconv.ParseUint(l.Header.Get(deadletter.HeaderSeq), 10, 64)
		dl.Deliveries, _ = strconv.ParseInt(l.Header.Get(deadletter.HeaderDeliveries), 10, 64)
		for k, vs := range l.Header {
			hv := dl.Headers[wire.ValidUTF8(k)]
			if hv == nil {
				hv = &jetgatev1.HeaderValues{}
				dl.Headers[wire.ValidUTF8(k)] = hv
			}
			for _, v := range vs {
				hv.Values = append(hv.Values, wire.ValidUTF8(v))
			}
		}
		out.DeadLetters[i] = dl
	}
	return out, nil
}

// validateDeadLetterPage checks a ListDeadLetters request and returns the
// sequence its page starts at and its size.
func validateDeadLetterPage(req *jetgatev1.ListDeadLettersRequest) (uint64, int, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return 0, 0, err
	}
	n := int(req.GetPageSize())
	switch {
	case n < 0 || n > maxDeadLetterPage:
		return 0, 0, fmt.Errorf("%w: page_size must be 0 to %d", errs.ErrInvalidArgument, maxDeadLetterPage)
	case n == 0:
		n = defaultDeadLetterPage
	}
	var from uint64
	if t := req.GetPageToken(); t != "" {
		var err error
		if from, err = strconv.ParseUint(t, 10, 64); err != nil || from == 0 {
			return 0, 0, fmt.Errorf("%w: page_token is not one a previous page gave", errs.ErrInvalidArgument)
		}
	}
	return from, n, nil
}
