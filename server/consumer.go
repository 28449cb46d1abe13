package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/core"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

func (s *consumerService) Fetch(ctx context.Context, req *jetgatev1.FetchRequest) (*jetgatev1.FetchResponse, error) {
	fr, err := validateFetch(req, s.lim)
	if err != nil {
		return nil, s.status(err)
	}
	fr.Principal = auth.Principal(ctx)
	res, err := s.g.Fetch(ctx, req.GetStream(), req.GetConsumer(), fr)
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.FetchResponse{
		Messages:    messagesOf(res.Messages),
		EmptyReason: jetgatev1.EmptyReason(res.Empty),
	}, nil
}

func (s *consumerService) Ack(ctx context.Context, req *jetgatev1.AckRequest) (*jetgatev1.AckResponse, error) {
	fails, err := s.settle(ctx, req, core.SettleRequest{Op: lease.OpAck}, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.AckResponse{Failures: fails}, nil
}

func (s *consumerService) Nak(ctx context.Context, req *jetgatev1.NakRequest) (*jetgatev1.NakResponse, error) {
	sr := core.SettleRequest{Op: lease.OpNak}
	if d := req.GetDelay(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			return nil, s.status(fmt.Errorf("%w: delay must be a duration of 0s or more", errs.ErrInvalidArgument))
		}
		sr.Delay = d.AsDuration()
	}
	fails, err := s.settle(ctx, req, sr, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.NakResponse{Failures: fails}, nil
}

func (s *consumerService) Term(ctx context.Context, req *jetgatev1.TermRequest) (*jetgatev1.TermResponse, error) {
	if len(req.GetReason()) > settle.MaxReasonLen {
		return nil, s.status(fmt.Errorf("%w: reason is %d bytes; at most %d are allowed", errs.ErrInvalidArgument, len(req.GetReason()), settle.MaxReasonLen))
	}
	fails, err := s.settle(ctx, req, core.SettleRequest{Op: lease.OpTerm, Reason: req.GetReason()}, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.TermResponse{Failures: fails}, nil
}

func (s *consumerService) Extend(ctx context.Context, req *jetgatev1.ExtendRequest) (*jetgatev1.ExtendResponse, error) {
	resp := &jetgatev1.ExtendResponse{}
	fails, err := s.settle(ctx, req, core.SettleRequest{Op: lease.OpExtend}, func(tok string, o settle.Outcome) {
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

// settleRequest is what Ack, Nak, Term and Extend requests share.
type settleRequest interface {
	GetStream() string
	GetConsumer() string
	GetTokens() []string
}

func (s *consumerService) settle(ctx context.Context, req settleRequest, sr core.SettleRequest, ok func(string, settle.Outcome)) ([]*jetgatev1.TokenFailure, error) {
	if err := validateSettle(req); err != nil {
		return nil, s.status(err)
	}
	sr.Tokens = req.GetTokens()
	sr.Principal = auth.Principal(ctx)
	outs, err := s.g.Settle(ctx, req.GetStream(), req.GetConsumer(), sr)
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
	st, err := s.g.Consumer(ctx, req.GetStream(), req.GetConsumer())
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.GetConsumerResponse{
		Config:           consumerConfigOf(st.Info),
		State:            consumerStateOf(st.Info),
		GatewayLeases:    int64(st.GatewayLeases),
		DeadLetters:      st.DeadLetters,
		OldestUnackedAge: durationpb.New(st.OldestUnackedAge),
	}, nil
}

// maxRedriveSeqs bounds the sequences one Redrive names.
const maxRedriveSeqs = 1000

func (s *consumerService) Redrive(ctx context.Context, req *jetgatev1.RedriveRequest) (*jetgatev1.RedriveResponse, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return nil, s.status(err)
	}
	if n := len(req.GetSeqs()); n > maxRedriveSeqs {
		return nil, s.status(fmt.Errorf("%w: seqs: %d given; at most %d per request (none redrives all)", errs.ErrInvalidArgument, n, maxRedriveSeqs))
	}
	if slices.Contains(req.GetSeqs(), 0) {
		return nil, s.status(fmt.Errorf("%w: seqs: 0 is not a stream sequence", errs.ErrInvalidArgument))
	}
	res, err := s.g.Redrive(ctx, req.GetStream(), req.GetConsumer(), req.GetSeqs())
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
