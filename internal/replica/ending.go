package replica

import (
	"context"
	"errors"

	"github.com/jetgate/jetgate/internal/consumer"
)

// EndStreams ends every caller's Consume stream, UNAVAILABLE, and every
// Fetch that waits, as the gateway begins to stop: such a stream never ends
// by itself, and kept open it would hold the stop for its whole grace while
// its caller, whose connection takes no new call, could settle nothing (a
// reviewer saw each message a client library held run twice); a long poll
// held it as long as it waited. The caller reconnects, to another replica or
// to this one started again, and settles there the leases it holds, which
// stay its own. Push streams stop with StopPush. A stream that starts after
// it ends at once (ConsumeRequest.Ending).
func (r *Replica) EndStreams() { r.endStreams() }

// fetchUntilEnding is c.Fetch, which a Fetch that may wait (expires above
// 0) ends early as the gateway begins to stop (EndStreams): as if it
// expired, empty, and the caller fetches again, from another replica or
// this one started again. What its pull had taken and not returned yet is
// the orphan pool's: handed to a Fetch or nak'ed back as the replica closes.
func (r *Replica) fetchUntilEnding(ctx context.Context, c *consumer.Consumer, req consumer.FetchRequest) (consumer.FetchResult, error) {
	if req.Expires <= 0 {
		return c.Fetch(ctx, req)
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(r.ending, func() { cancel(errStopping) })()
	res, err := c.Fetch(fctx, req)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(fctx), errStopping) {
		return consumer.FetchResult{Empty: consumer.EmptyNoMessages}, nil
	}
	return res, err
}
