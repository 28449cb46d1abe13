package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// leaser is what the consumer service needs of the gateway.
type leaser interface {
	Fetch(ctx context.Context, stream, consumer string, req FetchRequest) (FetchResult, error)
	Settle(ctx context.Context, stream, consumer string, req SettleRequest) ([]Outcome, error)
	Consumer(ctx context.Context, stream, consumer string) (ConsumerStatus, error)
}

// publisher is what the stream service needs of the gateway.
type publisher interface {
	Publish(ctx context.Context, req PublishRequest) (PubAck, error)
}

// Limits are the request bounds the services enforce.
type Limits struct {
	MaxBatch   int
	MaxExpires time.Duration
}

// Register adds jetgate's services, backed by g, to s.
func Register(s *grpc.Server, g *Gateway) {
	lim := Limits{MaxBatch: g.maxBatch, MaxExpires: g.maxExp}
	e := edge{log: g.log}
	jetgatev1.RegisterConsumerServiceServer(s, &consumerService{edge: e, g: g, lim: lim})
	jetgatev1.RegisterStreamServiceServer(s, &streamService{edge: e, g: g})
}

type consumerService struct {
	jetgatev1.UnimplementedConsumerServiceServer
	edge
	g   leaser
	lim Limits
}

type streamService struct {
	jetgatev1.UnimplementedStreamServiceServer
	edge
	g publisher
}

// edge is where domain errors become gRPC statuses. An error whose text is
// not shown to the caller is logged here, once.
type edge struct{ log *slog.Logger }

func (e edge) status(err error) error {
	st := toStatus(err)
	if k := kindOf(err); k.message != "" && k.code != codes.Canceled && k.code != codes.DeadlineExceeded &&
		k.code != codes.InvalidArgument && k.code != codes.FailedPrecondition {
		e.log.Warn("request failed", "code", k.code, "err", err)
	}
	return st
}

func (s *consumerService) Fetch(ctx context.Context, req *jetgatev1.FetchRequest) (*jetgatev1.FetchResponse, error) {
	fr, err := validateFetch(req, s.lim)
	if err != nil {
		return nil, s.status(err)
	}
	fr.Principal = principalOf(ctx)
	res, err := s.g.Fetch(ctx, req.GetStream(), req.GetConsumer(), fr)
	if err != nil {
		return nil, s.status(err)
	}
	resp := &jetgatev1.FetchResponse{
		Messages:    make([]*jetgatev1.Message, len(res.Messages)),
		EmptyReason: jetgatev1.EmptyReason(res.Empty),
	}
	for i, d := range res.Messages {
		resp.Messages[i] = messageOf(d)
	}
	return resp, nil
}

func (s *consumerService) Ack(ctx context.Context, req *jetgatev1.AckRequest) (*jetgatev1.AckResponse, error) {
	fails, err := s.settle(ctx, req, SettleRequest{Op: OpAck}, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.AckResponse{Failures: fails}, nil
}

func (s *consumerService) Nak(ctx context.Context, req *jetgatev1.NakRequest) (*jetgatev1.NakResponse, error) {
	sr := SettleRequest{Op: OpNak}
	if d := req.GetDelay(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
			return nil, s.status(fmt.Errorf("%w: delay must be a duration of 0s or more", ErrInvalidArgument))
		}
		sr.Delay = d.AsDuration()
	}
	fails, err := s.settle(ctx, req, sr, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.NakResponse{Failures: fails}, nil
}

// maxTermReason bounds the reason of a Term.
const maxTermReason = 1024

func (s *consumerService) Term(ctx context.Context, req *jetgatev1.TermRequest) (*jetgatev1.TermResponse, error) {
	if len(req.GetReason()) > maxTermReason {
		return nil, s.status(fmt.Errorf("%w: reason is %d bytes; at most %d are allowed", ErrInvalidArgument, len(req.GetReason()), maxTermReason))
	}
	fails, err := s.settle(ctx, req, SettleRequest{Op: OpTerm, Reason: req.GetReason()}, nil)
	if err != nil {
		return nil, err
	}
	return &jetgatev1.TermResponse{Failures: fails}, nil
}

func (s *consumerService) Extend(ctx context.Context, req *jetgatev1.ExtendRequest) (*jetgatev1.ExtendResponse, error) {
	resp := &jetgatev1.ExtendResponse{}
	fails, err := s.settle(ctx, req, SettleRequest{Op: OpExtend}, func(tok string, o Outcome) {
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

func (s *consumerService) settle(ctx context.Context, req settleRequest, sr SettleRequest, ok func(string, Outcome)) ([]*jetgatev1.TokenFailure, error) {
	if err := validateSettle(req); err != nil {
		return nil, s.status(err)
	}
	sr.Tokens = req.GetTokens()
	sr.Principal = principalOf(ctx)
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
			Token: sr.Tokens[i], Index: int32(i), Code: int32(code), Reason: reason, Message: msg,
		})
	}
	return fails, nil
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
		Config:        consumerConfigOf(st.Info),
		State:         consumerStateOf(st.Info),
		GatewayLeases: int64(st.GatewayLeases),
	}, nil
}

func (s *streamService) Publish(ctx context.Context, req *jetgatev1.PublishRequest) (*jetgatev1.PublishResponse, error) {
	pr, err := validatePublish(req)
	if err != nil {
		return nil, s.status(err)
	}
	ack, err := s.g.Publish(ctx, pr)
	if err != nil {
		return nil, s.status(err)
	}
	return &jetgatev1.PublishResponse{Stream: ack.Stream, Seq: ack.Seq, Duplicate: ack.Duplicate}, nil
}

// principalOf is the authenticated caller, bound into tokens. jetgate has no
// authentication yet, so every caller is the same, empty principal.
func principalOf(context.Context) string { return "" }

func messageOf(d *Delivery) *jetgatev1.Message {
	m := &jetgatev1.Message{
		Token:         d.Token,
		Subject:       d.Subject,
		Data:          d.Data,
		LeaseDeadline: timestamppb.New(d.Deadline),
		Metadata: &jetgatev1.MessageMetadata{
			Stream:       d.Meta.Stream,
			Consumer:     d.Meta.Consumer,
			StreamSeq:    d.Meta.StreamSeq,
			ConsumerSeq:  d.Meta.ConsumerSeq,
			NumDelivered: d.Meta.Delivered,
			NumPending:   d.Meta.Pending,
			Timestamp:    timestamppb.New(d.Meta.Timestamp),
		},
	}
	if len(d.Header) > 0 {
		m.Headers = make(map[string]*jetgatev1.HeaderValues, len(d.Header))
		for k, vs := range d.Header {
			m.Headers[k] = &jetgatev1.HeaderValues{Values: vs}
		}
	}
	return m
}

func headerOf(h map[string]*jetgatev1.HeaderValues) nats.Header {
	if len(h) == 0 {
		return nil
	}
	out := make(nats.Header, len(h))
	for k, v := range h {
		out[k] = append([]string(nil), v.GetValues()...)
	}
	return out
}

var deliverPolicies = map[jetstream.DeliverPolicy]jetgatev1.DeliverPolicy{
	jetstream.DeliverAllPolicy:             jetgatev1.DeliverPolicy_DELIVER_POLICY_ALL,
	jetstream.DeliverLastPolicy:            jetgatev1.DeliverPolicy_DELIVER_POLICY_LAST,
	jetstream.DeliverNewPolicy:             jetgatev1.DeliverPolicy_DELIVER_POLICY_NEW,
	jetstream.DeliverByStartSequencePolicy: jetgatev1.DeliverPolicy_DELIVER_POLICY_BY_START_SEQUENCE,
	jetstream.DeliverByStartTimePolicy:     jetgatev1.DeliverPolicy_DELIVER_POLICY_BY_START_TIME,
	jetstream.DeliverLastPerSubjectPolicy:  jetgatev1.DeliverPolicy_DELIVER_POLICY_LAST_PER_SUBJECT,
}

var ackPolicies = map[jetstream.AckPolicy]jetgatev1.AckPolicy{
	jetstream.AckExplicitPolicy: jetgatev1.AckPolicy_ACK_POLICY_EXPLICIT,
	jetstream.AckAllPolicy:      jetgatev1.AckPolicy_ACK_POLICY_ALL,
	jetstream.AckNonePolicy:     jetgatev1.AckPolicy_ACK_POLICY_NONE,
}

func consumerConfigOf(ci *jetstream.ConsumerInfo) *jetgatev1.ConsumerConfig {
	c := ci.Config
	out := &jetgatev1.ConsumerConfig{
		DurableName:     c.Durable,
		Description:     c.Description,
		DeliverPolicy:   deliverPolicies[c.DeliverPolicy],
		OptStartSeq:     c.OptStartSeq,
		AckPolicy:       ackPolicies[c.AckPolicy],
		AckWait:         durationpb.New(c.AckWait),
		MaxDeliver:      int64(c.MaxDeliver),
		FilterSubjects:  c.FilterSubjects,
		MaxWaiting:      int64(c.MaxWaiting),
		MaxAckPending:   int64(c.MaxAckPending),
		MaxRequestBatch: int64(c.MaxRequestBatch),
		NumReplicas:     int32(c.Replicas),
	}
	if c.FilterSubject != "" {
		out.FilterSubjects = append([]string{c.FilterSubject}, out.FilterSubjects...)
	}
	if c.OptStartTime != nil {
		out.OptStartTime = timestamppb.New(*c.OptStartTime)
	}
	if c.MaxRequestExpires > 0 {
		out.MaxRequestExpires = durationpb.New(c.MaxRequestExpires)
	}
	for _, b := range c.BackOff {
		out.Backoff = append(out.Backoff, durationpb.New(b))
	}
	return out
}

func consumerStateOf(ci *jetstream.ConsumerInfo) *jetgatev1.ConsumerState {
	seq := func(s jetstream.SequenceInfo) *jetgatev1.SequencePair {
		p := &jetgatev1.SequencePair{ConsumerSeq: s.Consumer, StreamSeq: s.Stream}
		if s.Last != nil {
			p.LastActive = timestamppb.New(*s.Last)
		}
		return p
	}
	return &jetgatev1.ConsumerState{
		NumPending:     ci.NumPending,
		NumAckPending:  int64(ci.NumAckPending),
		NumRedelivered: int64(ci.NumRedelivered),
		NumWaiting:     int64(ci.NumWaiting),
		Delivered:      seq(ci.Delivered),
		AckFloor:       seq(ci.AckFloor),
		Created:        timestamppb.New(ci.Created),
	}
}
