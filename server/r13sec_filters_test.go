package server_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
)

// refusedAsTheCallers creates a consumer with cfg, then updates another one
// to it (mask: the field it sets): both are refused INVALID_ARGUMENT, and
// nothing is made or changed.
func refusedAsTheCallers(t *testing.T, what string, cfg func(name string) *jetgatev1.ConsumerConfig, mask string) {
	t.Helper()
	h := newHarness(t)
	a := h.adminGateways(1, coreconsumer.Admin{MaxAckWait: time.Minute})[0]
	start := time.Now()
	_, err := create(h, a, cfg("team-x"))
	if c, _ := codeAndReason(err); c != codes.InvalidArgument {
		t.Errorf("create with %s: %v after %v; want INVALID_ARGUMENT", what, err, time.Since(start).Round(time.Millisecond))
	}
	if _, err := h.js.Consumer(h.ctx(), stream, "team-x"); err == nil {
		t.Errorf("create with %s: refused, and the consumer was made", what)
	}
	if _, err := create(h, a, &jetgatev1.ConsumerConfig{DurableName: "team-small"}); err != nil {
		t.Fatal(err)
	}
	_, err = a.UpdateConsumer(h.ctx(), &jetgatev1.UpdateConsumerRequest{Stream: stream, Consumer: "team-small", Config: cfg("team-small"),
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{mask}}})
	if c, _ := codeAndReason(err); c != codes.InvalidArgument {
		t.Errorf("update with %s: %v; want INVALID_ARGUMENT", what, err)
	}
	ci, err := h.js.Consumer(h.ctx(), stream, "team-small")
	if err != nil {
		t.Fatal(err)
	}
	if c := ci.CachedInfo().Config; len(c.FilterSubjects) > 0 || c.FilterSubject != "" || c.Description != "" {
		t.Errorf("a refused update changed the consumer: %d filter subjects, a description of %d bytes", len(c.FilterSubjects), len(c.Description))
	}
}

// 10,000 filter subjects asked for through the API: the NATS server checks
// each pair on a create and an update (3.7s of its JetStream API for one
// create, which every other caller waits behind); the create outlasted its
// hold and was answered UNAVAILABLE "retry", while the server made the
// consumer all the same. Refused at once, as the caller's to fix.
func TestManyFilterSubjectsThroughTheAPIAreRefused(t *testing.T) {
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("orders.%d", i)
	}
	refusedAsTheCallers(t, "10,000 filter subjects", func(name string) *jetgatev1.ConsumerConfig {
		return &jetgatev1.ConsumerConfig{DurableName: name, FilterSubjects: many}
	}, "filter_subjects")
}
