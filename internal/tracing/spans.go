package tracing

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Spans starts jetgate's messaging spans, per the messaging semantic
// conventions. A nil *Spans (tracing off) starts none, and the nil *Span
// it returns does nothing: nothing is allocated.
type Spans struct{ tracer trace.Tracer }

// Spans is t's span starter, nil when off.
func (t *Tracing) Spans() *Spans {
	if !t.On() {
		return nil
	}
	return &Spans{tracer: t.Tracer()}
}

// Span is one messaging span; nil does nothing.
type Span struct{ span trace.Span }

var natsSystem = semconv.MessagingSystemKey.String("nats")

// Publish starts the PRODUCER span of a publish of n messages to subject of
// stream; Inject puts its context into the messages' headers.
func (s *Spans) Publish(ctx context.Context, stream, subject string, n int) (context.Context, *Span) {
	if s == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{natsSystem, semconv.MessagingDestinationName(subject),
		semconv.MessagingOperationName("publish"), semconv.MessagingOperationTypeSend,
		attribute.String("jetgate.stream", stream)}
	if n > 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(n))
	}
	ctx, span := s.tracer.Start(ctx, "publish "+subject, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return ctx, &Span{span}
}

// Receive starts the span of a Fetch or of a Consume burst; Link it to
// each message's creation context.
func (s *Spans) Receive(ctx context.Context, stream, consumer string) *Span {
	return s.start(ctx, "receive", stream, consumer, semconv.MessagingOperationTypeReceive)
}

// Settle starts the span of an Ack, Nak, Term or Extend (op); Link it to
// the creation context of each settled message whose lease this replica
// holds.
func (s *Spans) Settle(ctx context.Context, op, stream, consumer string) *Span {
	return s.start(ctx, op, stream, consumer, semconv.MessagingOperationTypeSettle)
}

func (s *Spans) start(ctx context.Context, op, stream, consumer string, kind attribute.KeyValue) *Span {
	if s == nil {
		return nil
	}
	_, span := s.tracer.Start(ctx, op+" "+stream, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(natsSystem, semconv.MessagingDestinationName(stream),
			semconv.MessagingConsumerGroupName(consumer), semconv.MessagingOperationName(op), kind))
	return &Span{span}
}

// Link links the span to each valid origin and counts the messages.
func (s *Span) Link(n int, origins []trace.SpanContext) {
	if s == nil {
		return
	}
	s.span.SetAttributes(semconv.MessagingBatchMessageCount(n))
	for _, o := range origins {
		if o.IsValid() {
			s.span.AddLink(trace.Link{SpanContext: o})
		}
	}
}

// MessageID names the one message the span is of: <stream>.<seq>, as a
// push's Webhook-Id and its span name it.
func (s *Span) MessageID(stream string, seq uint64) {
	if s == nil {
		return
	}
	s.span.SetAttributes(semconv.MessagingMessageID(stream + "." + strconv.FormatUint(seq, 10)))
}

// Failed counts the messages of a settle that failed, if any did.
func (s *Span) Failed(n int) {
	if s == nil || n == 0 {
		return
	}
	s.span.SetAttributes(attribute.Int("jetgate.settle.failures", n))
}

// End ends the span with its outcome.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	if err != nil {
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.span.End()
}
