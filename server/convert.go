package server

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/push"
)

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
		DurableName:        c.Durable,
		Description:        c.Description,
		DeliverPolicy:      deliverPolicies[c.DeliverPolicy],
		OptStartSeq:        c.OptStartSeq,
		AckPolicy:          ackPolicies[c.AckPolicy],
		AckWait:            durationpb.New(c.AckWait),
		MaxDeliver:         int64(c.MaxDeliver),
		FilterSubjects:     c.FilterSubjects,
		MaxWaiting:         int64(c.MaxWaiting),
		MaxAckPending:      int64(c.MaxAckPending),
		MaxRequestBatch:    int64(c.MaxRequestBatch),
		MaxRequestMaxBytes: int64(c.MaxRequestMaxBytes),
		NumReplicas:        int32(c.Replicas),
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
	out.PriorityGroups, out.PriorityPolicy = c.PriorityGroups, priorityPolicies[c.PriorityPolicy]
	if c.PinnedTTL > 0 {
		out.PriorityTimeout = durationpb.New(c.PinnedTTL)
	}
	if c.PauseUntil != nil && !c.PauseUntil.IsZero() {
		out.PauseUntil = timestamppb.New(*c.PauseUntil)
	}
	out.Metadata = c.Metadata
	if c.InactiveThreshold > 0 {
		out.InactiveThreshold = durationpb.New(c.InactiveThreshold)
	}
	return out
}

var priorityPolicies = map[jetstream.PriorityPolicy]jetgatev1.PriorityPolicy{
	jetstream.PriorityPolicyOverflow:    jetgatev1.PriorityPolicy_PRIORITY_POLICY_OVERFLOW,
	jetstream.PriorityPolicyPinned:      jetgatev1.PriorityPolicy_PRIORITY_POLICY_PINNED_CLIENT,
	jetstream.PriorityPolicyPrioritized: jetgatev1.PriorityPolicy_PRIORITY_POLICY_PRIORITIZED,
}

func consumerStateOf(ci *jetstream.ConsumerInfo) *jetgatev1.ConsumerState {
	seq := func(s jetstream.SequenceInfo) *jetgatev1.SequencePair {
		p := &jetgatev1.SequencePair{ConsumerSeq: s.Consumer, StreamSeq: s.Stream}
		if s.Last != nil {
			p.LastActive = timestamppb.New(*s.Last)
		}
		return p
	}
	st := &jetgatev1.ConsumerState{
		NumPending:     ci.NumPending,
		NumAckPending:  int64(ci.NumAckPending),
		NumRedelivered: int64(ci.NumRedelivered),
		NumWaiting:     int64(ci.NumWaiting),
		Delivered:      seq(ci.Delivered),
		AckFloor:       seq(ci.AckFloor),
		Created:        timestamppb.New(ci.Created),
		Paused:         ci.Paused,
	}
	if ci.Paused {
		st.PauseRemaining = durationpb.New(ci.PauseRemaining)
	}
	// Each group and whether it is pinned; never the pin, which would let
	// any reader take the pinned client's place.
	groups := map[string]jetstream.PriorityGroupState{}
	for _, g := range ci.PriorityGroups {
		groups[g.Group] = g
	}
	for _, name := range ci.Config.PriorityGroups {
		g := &jetgatev1.PriorityGroupState{Group: name}
		if pg := groups[name]; pg.PinnedClientID != "" {
			g.Pinned, g.PinnedSince = true, timestamppb.New(pg.PinnedTS)
		}
		st.PriorityGroups = append(st.PriorityGroups, g)
	}
	return st
}

func pushStateOf(p *push.State) *jetgatev1.PushState {
	if p == nil {
		return nil
	}
	out := &jetgatev1.PushState{Url: p.URL, InFlight: int32(p.InFlight), EndpointUp: p.EndpointUp, LastError: p.LastError}
	if !p.LastErrorAt.IsZero() {
		out.LastErrorTime = timestamppb.New(p.LastErrorAt)
	}
	return out
}
