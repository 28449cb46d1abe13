package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/jetgate/jetgate/internal/errs"
)

// PublishBatch stores msgs all or none, as one atomic batch (ADR-50), and
// returns each one's sequence: the server stores a batch's messages one
// after another.
func (pb *publisher) PublishBatch(ctx context.Context, stream string, reqs []PublishRequest) (_ []uint64, err error) {
	ctx, span := pb.spans.Publish(ctx, stream, stream, len(reqs)) // a batch may span subjects: named by its stream
	defer func() { span.End(err) }()
	msgs := make([]*nats.Msg, len(reqs))
	for i, req := range reqs {
		m, err := pb.message(ctx, req, span != nil)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		batchHeaders(m, i, len(reqs))
		if err := pb.fitsPayload(m); err != nil {
			return nil, fmt.Errorf("messages[%d], with the headers the batch adds: %w", i, err)
		}
		msgs[i] = m
	}
	pctx, cancel := context.WithTimeout(ctx, pb.timeout)
	defer cancel()
	subjects := make([]string, len(msgs))
	for i, m := range msgs {
		subjects[i] = m.Subject
	}
	pctx, done := pb.waits.wait(pctx, subjects...)
	defer done()
	// No ack of the first message, unlike PublishMsgBatch's default: it is
	// waited for with a timeout of its own, not pctx, which a refusal of its
	// subject could not end. The commit's answer tells what the server
	// refused of the batch all the same (a first message it never saw:
	// incomplete).
	flow := jetstreamext.BatchFlowControl{AckFirst: false}
	ack, err := jetstreamext.PublishMsgBatch(pctx, pb.js, msgs, flow)
	if err != nil {
		return nil, pb.batchError(ctx, stream, msgs, refusal(pctx, err))
	}
	seqs := make([]uint64, len(msgs))
	for i := range seqs {
		seqs[i] = ack.Sequence - uint64(len(msgs)-1-i)
	}
	return seqs, nil
}

// batchError maps what a batch failed with, naming the message at fault
// where it can be told.
func (pb *publisher) batchError(ctx context.Context, stream string, msgs []*nats.Msg, err error) error {
	var apiErr *jetstream.APIError
	isAPI := errors.As(err, &apiErr)
	incomplete := isAPI && apiErr.ErrorCode == jsErrAtomicPublishIncompleteBatch
	for i, m := range msgs {
		if perr := pb.fitsPayload(m); perr != nil && errors.Is(err, nats.ErrMaxPayload) { // a server of a smaller max_payload
			return fmt.Errorf("messages[%d], with the headers the batch adds: %w", i, perr)
		}
		if derr := pb.denied(m.Subject, err); derr != nil && (!isAPI || incomplete) && ctx.Err() == nil {
			return fmt.Errorf("messages[%d]: %w", i, derr)
		}
	}
	if incomplete && ctx.Err() == nil {
		return pb.incompleteBatch(ctx, stream, msgs)
	}
	return pb.publishError(ctx, stream, msgs[len(msgs)-1], err)
}

// batchIDLen is the length of a batch's id: a nuid.
const batchIDLen = 22

// batchHeaders gives m, message i of n, the headers PublishMsgBatch sets on
// it (each value overwritten as it sends), so that its size counts them: a
// message over max_payload with them fails in nats.go, after the batch began.
func batchHeaders(m *nats.Msg, i, n int) {
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	m.Header.Set(jetstreamext.BatchIDHeader, strings.Repeat("0", batchIDLen))
	m.Header.Set(jetstreamext.BatchSeqHeader, strconv.Itoa(i+1))
	if i == n-1 {
		m.Header.Set(jetstreamext.BatchCommitHeader, "1")
	}
}

// jsErrAtomicPublishIncompleteBatch is the server's error code for a batch
// whose commit came without one of its messages (JSAtomicPublishIncompleteBatchErr).
const jsErrAtomicPublishIncompleteBatch = 10176

// incompleteBatch explains a batch the server found incomplete: it refused
// a message before the last, and answered that refusal to no one (such a
// message is sent without a reply subject). The likely cause, a message over
// the stream's max_msg_size, is looked for and named.
func (pb *publisher) incompleteBatch(ctx context.Context, stream string, msgs []*nats.Msg) error {
	lctx, cancel := context.WithTimeout(ctx, pb.timeout)
	defer cancel()
	if st, err := pb.js.Stream(lctx, stream); err == nil {
		limit := int(st.CachedInfo().Config.MaxMsgSize)
		for i, m := range msgs {
			if size := m.Size() - len(m.Subject) - len(m.Reply); limit > 0 && size > limit {
				return fmt.Errorf("%w: messages[%d] is %d bytes with its headers and the batch's; stream %q takes at most %d (its max_msg_size); nothing was stored",
					errs.ErrPublishRefused, i, size, stream, limit)
			}
		}
	}
	return fmt.Errorf("%w: stream %q refused a message of the batch before its last, and says only that the batch is incomplete (a message over its max_msg_size, the account's limits reached, or a message lost to a NATS reconnect); nothing was stored, and it may be sent again",
		errs.ErrPublishRefused, stream)
}
