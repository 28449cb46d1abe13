package server

import (
	"context"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
	"github.com/jetgate/jetgate/internal/wire"
)

func (s *consumerService) Fetch(ctx context.Context, req *jetgatev1.FetchRequest) (*jetgatev1.FetchResponse, error) {
	fr, err := validateFetch(req, s.lim)
	if err != nil {
		return nil, s.status(err)
	}
	fr.Principal = auth.Principal(ctx)
	res, err := s.replica.Fetch(ctx, req.GetStream(), req.GetConsumer(), fr)
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.FetchResponse{
		Messages:    wire.Messages(res.Messages),
		EmptyReason: jetgatev1.EmptyReason(res.Empty),
		PinId:       res.PinID,
	}, nil
}

func (s *consumerService) Ack(ctx context.Context, req *jetgatev1.AckRequest) (*jetgatev1.AckResponse, error) {
	fails, err := s.settle(ctx, req, lease.OpAck, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.AckResponse{Failures: fails}, nil
}

func (s *consumerService) Nak(ctx context.Context, req *jetgatev1.NakRequest) (*jetgatev1.NakResponse, error) {
	fails, err := s.settle(ctx, req, lease.OpNak, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.NakResponse{Failures: fails}, nil
}

func (s *consumerService) Term(ctx context.Context, req *jetgatev1.TermRequest) (*jetgatev1.TermResponse, error) {
	fails, err := s.settle(ctx, req, lease.OpTerm, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.TermResponse{Failures: fails}, nil
}

func (s *consumerService) Extend(ctx context.Context, req *jetgatev1.ExtendRequest) (*jetgatev1.ExtendResponse, error) {
	resp := &jetgatev1.ExtendResponse{}
	fails, err := s.settle(ctx, req, lease.OpExtend, func(tok string, o settle.Outcome) {
		resp.Leases = append(resp.Leases, &jetgatev1.ExtendedLease{
			Token:         tok,
			NewToken:      o.NewToken,
			LeaseDeadline: timestamppb.New(o.Deadline),
		})
	})
	if err != nil {
		return nil, err
	}
	resp.Failures = fails
	return resp, nil
}

// settle runs an Ack, Nak, Term or Extend and reports each token that
// failed; ok is told of each that did not.
func (s *consumerService) settle(ctx context.Context, req settleRequest, op lease.Op, ok func(string, settle.Outcome)) ([]*jetgatev1.TokenFailure, error) {
	sr, err := validateSettle(req, op, auth.Principal(ctx), s.lim)
	if err != nil {
		return nil, s.status(err)
	}
	outs, err := s.replica.Settle(ctx, sr)
	if err != nil {
		return nil, s.status(err)
	}
	var fails []*jetgatev1.TokenFailure
	for i, o := range outs {
		if o.Err == nil {
			if ok != nil {
				ok(sr.Tokens[i], o)
			}
			continue
		}
		code, reason, msg := failureOf(o.Err)
		fails = append(fails, &jetgatev1.TokenFailure{
			Token: echoed(sr.Tokens[i]), Index: int32(i), Code: int32(code), Reason: reason, Message: msg,
		})
	}
	return fails, nil
}

// echoed is a failed token as its failure repeats it: whole if it could be a
// token, else cut, so that a thousand junk tokens near the request limit do
// not make a response over a default gRPC client's 4 MiB. index says which
// it was.
func echoed(tok string) string {
	if len(tok) <= token.MaxTokenLen {
		return tok
	}
	return strings.ToValidUTF8(tok[:32], "") + "…"
}

func (s *consumerService) GetConsumer(ctx context.Context, req *jetgatev1.GetConsumerRequest) (*jetgatev1.GetConsumerResponse, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return nil, s.status(err)
	}
	st, err := s.replica.Consumer(ctx, req.GetStream(), req.GetConsumer())
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.GetConsumerResponse{
		Config:           consumerConfigOf(st.Info),
		State:            consumerStateOf(st.Info),
		GatewayLeases:    int64(st.GatewayLeases),
		DeadLetters:      st.DeadLetters,
		OldestUnackedAge: durationpb.New(st.OldestUnackedAge),
		Push:             pushStateOf(st.Push),
	}, nil
}

func (s *consumerService) Redrive(ctx context.Context, req *jetgatev1.RedriveRequest) (*jetgatev1.RedriveResponse, error) {
	if err := validateRedrive(req); err != nil {
		return nil, s.status(err)
	}
	res, err := s.replica.Redrive(ctx, req.GetStream(), req.GetConsumer(), req.GetSeqs())
	if err != nil {
		return nil, s.status(err)
	}
	resp := &jetgatev1.RedriveResponse{Redriven: int64(res.Redriven)}
	for _, f := range res.Failures {
		code, reason, msg := failureOf(f.Err)
		resp.Failures = append(resp.Failures, &jetgatev1.RedriveFailure{Seq: f.Seq, Code: int32(code), Reason: reason, Message: msg})
	}
	return resp, nil
}
