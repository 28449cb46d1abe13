package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
)

// SeekTarget is where a Seek moves a consumer's delivery: a stream
// sequence, the first message stored at or after a time, or (AckFloor) the
// first message not acknowledged. Exactly one is set.
type SeekTarget struct {
	Seq      uint64
	Time     time.Time
	AckFloor bool
}

// SeekResult is the consumer after a Seek: the stream sequence it delivers
// next, and its info as the server answered the reset.
type SeekResult struct {
	ResetSeq uint64
	Info     *jetstream.ConsumerInfo
}

// resetAPI is the server's consumer reset (ADR-60), under the API prefix.
const resetAPI = "CONSUMER.RESET."

// seekMinServer is the first nats-server with the consumer reset API.
var seekMinServer = [2]int{2, 14}

// Seek moves where consumer stream/name delivers from, with the server's
// consumer reset. It passes on the subject every replica watches
// (relay.onResetRequest), so every replica voids the consumer's leases as
// for any reset; this one voids its own before it answers, so that a token
// from before the seek is refused by the time the caller hears of it.
func (m *manager) Seek(ctx context.Context, stream, name string, to SeekTarget) (SeekResult, error) {
	c, done, err := m.binder.consumer(ctx, stream, name)
	if err != nil {
		return SeekResult{}, err
	}
	defer done()
	// The connection's server is JetStream's own unless a domain is set:
	// through a leaf node it is the leaf's, whatever the hub runs (a
	// reviewer's finding), and the reset is sent for the hub to answer.
	if v := m.nc.ConnectedServerVersion(); m.domain == "" && !versionAtLeast(v, seekMinServer) {
		return SeekResult{}, fmt.Errorf("%w: Seek needs nats-server %d.%d or later (its consumer reset API); this one is %s",
			errs.ErrSeekUnsupported, seekMinServer[0], seekMinServer[1], v)
	}
	ci, err := c.Info(ctx) // CONSUMER_NOT_FOUND where jetgate cannot serve it
	if err != nil {
		return SeekResult{}, err
	}
	var payload []byte
	if !to.AckFloor {
		seq, err := m.seekSeq(ctx, stream, to)
		if err != nil {
			return SeekResult{}, err
		}
		if err := seekAllowed(ci.Config, seq); err != nil {
			return SeekResult{}, err
		}
		if err := m.notPastTheEnd(ctx, stream, seq); err != nil {
			return SeekResult{}, err
		}
		payload, _ = json.Marshal(struct {
			Seq uint64 `json:"seq"`
		}{seq})
	}
	res, id, err := m.reset(ctx, stream, name, payload)
	if err != nil {
		return SeekResult{}, err
	}
	c.ResetRequested(id) // noticed once however many ways it arrives
	return res, nil
}

// seekSeq is the stream sequence a Seek to a sequence or a time names.
func (m *manager) seekSeq(ctx context.Context, stream string, to SeekTarget) (uint64, error) {
	if to.Time.IsZero() {
		if to.Seq == 0 {
			return 0, fmt.Errorf("%w: sequence: must be 1 or more", errs.ErrInvalidArgument)
		}
		return to.Seq, nil
	}
	if to.Time.After(time.Now()) {
		return 0, fmt.Errorf("%w: time %s has not come yet", errs.ErrSeekTimeInFuture, to.Time.UTC().Format(time.RFC3339))
	}
	return m.seqAt(ctx, stream, to.Time)
}

// notPastTheEnd refuses a Seek to a sequence past the one the next message
// stored will have: the server takes it, and the consumer then waits,
// silent, for a message that far on (a typo stops delivery).
func (m *manager) notPastTheEnd(ctx context.Context, stream string, seq uint64) error {
	last, err := m.lastSeq(ctx, stream)
	if err != nil {
		return err
	}
	if seq > last+1 {
		return fmt.Errorf("%w: sequence %d is past the end of stream %q (its last message is %d): seek to %d or less, %d for only the messages stored from now on",
			errs.ErrInvalidArgument, seq, stream, last, last+1, last+1)
	}
	return nil
}

// lastSeq is the sequence of the last message of stream.
func (m *manager) lastSeq(ctx context.Context, stream string) (uint64, error) {
	_, si, err := m.streamNow(ctx, stream)
	if err != nil {
		return 0, err
	}
	return si.State.LastSeq, nil
}

// seqAt is the sequence of the first message of stream stored at or after
// t, asked with one get by time; past the last message it is the sequence
// the next message stored will have.
func (m *manager) seqAt(ctx context.Context, stream string, t time.Time) (uint64, error) {
	req, _ := json.Marshal(struct {
		StartTime time.Time `json:"start_time"`
	}{t.UTC()})
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := m.request(ctx, m.api+"STREAM.MSG.GET."+stream, req, &resp); err != nil {
		return 0, err
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		last, err := m.lastSeq(ctx, stream)
		return last + 1, err
	case resp.Error != nil:
		return 0, fmt.Errorf("%w: finding the message at %s: %s", errs.ErrManageRefused, t.UTC().Format(time.RFC3339), resp.Error.Description)
	case resp.Message == nil:
		return 0, fmt.Errorf("%w: finding the message at %s: an empty answer", errs.ErrUnavailable, t.UTC().Format(time.RFC3339))
	}
	return resp.Message.Seq, nil
}

// seekAllowed checks seq against the consumer's deliver policy, as the
// server will (consumer.go resetStartingSeq), to say why in words of its
// own; the server's answer stays the authority.
func seekAllowed(cfg jetstream.ConsumerConfig, seq uint64) error {
	switch cfg.DeliverPolicy {
	case jetstream.DeliverAllPolicy, jetstream.DeliverByStartTimePolicy:
		return nil
	case jetstream.DeliverByStartSequencePolicy:
		if seq < cfg.OptStartSeq {
			return fmt.Errorf("%w: sequence %d is below the consumer's opt_start_seq %d", errs.ErrSeekBelowStart, seq, cfg.OptStartSeq)
		}
		return nil
	}
	return fmt.Errorf("%w: deliver policy %s has no start to move; seek to the ack floor instead", errs.ErrSeekNotAllowed, cfg.DeliverPolicy)
}

// reset sends the consumer reset with payload (empty: to the ack floor) on
// an inbox of its own, which names the reset on every replica (the id
// relay.onResetRequest takes from the request's reply subject).
func (m *manager) reset(ctx context.Context, stream, name string, payload []byte) (SeekResult, string, error) {
	var resp struct {
		jetstream.ConsumerInfo
		ResetSeq uint64              `json:"reset_seq"`
		Error    *jetstream.APIError `json:"error"`
	}
	inbox := m.nc.NewInbox()
	if err := m.requestOn(ctx, m.api+resetAPI+stream+"."+name, inbox, payload, &resp); err != nil {
		if m.domain != "" && errors.Is(err, errs.ErrUnavailable) && ctx.Err() == nil {
			err = fmt.Errorf("%w (JetStream of domain %q answers a reset from nats-server %d.%d on: an older one answers none)",
				err, m.domain, seekMinServer[0], seekMinServer[1])
		}
		return SeekResult{}, "", err
	}
	if resp.Error != nil {
		return SeekResult{}, "", resetError(resp.Error)
	}
	return SeekResult{ResetSeq: resp.ResetSeq, Info: &resp.ConsumerInfo}, inbox, nil
}

// resetError is the server's refusal of a reset, in jetgate's terms.
func resetError(e *jetstream.APIError) error {
	switch d := e.Description; {
	case strings.Contains(d, "below start"):
		return fmt.Errorf("%w: the server says: %s", errs.ErrSeekBelowStart, d)
	case strings.Contains(d, "not allowed"):
		return fmt.Errorf("%w: the server says: %s", errs.ErrSeekNotAllowed, d)
	case e.ErrorCode == jetstream.JSErrCodeConsumerNotFound:
		return fmt.Errorf("%w: the server says: %s", errs.ErrConsumerNotFound, d)
	}
	return fmt.Errorf("%w: the server refused the reset: %s", errs.ErrManageRefused, e.Description)
}

// request sends a JetStream API request and decodes its answer.
func (m *manager) request(ctx context.Context, subject string, data []byte, out any) error {
	return m.requestOn(ctx, subject, m.nc.NewInbox(), data, out)
}

// requestOn is request with the answer awaited on inbox.
func (m *manager) requestOn(ctx context.Context, subject, inbox string, data []byte, out any) error {
	sub, err := m.nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("%w: %v", errs.ErrUnavailable, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := m.nc.PublishRequest(subject, inbox, data); err != nil {
		return fmt.Errorf("%w: %v", errs.ErrUnavailable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	msg, err := sub.NextMsgWithContext(ctx)
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case err != nil:
		return fmt.Errorf("%w: no answer from JetStream to %s: %v", errs.ErrUnavailable, subject, err)
	case msg.Header.Get("Status") == "503":
		return fmt.Errorf("%w: JetStream did not answer %s (no responders)", errs.ErrUnavailable, subject)
	}
	if err := json.Unmarshal(msg.Data, out); err != nil {
		return fmt.Errorf("%w: JetStream's answer to %s: %v", errs.ErrUnavailable, subject, err)
	}
	return nil
}

// versionAtLeast reports whether server version v ("2.14.1", "2.15.0-beta")
// is at least major.minor.
func versionAtLeast(v string, want [2]int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false
	}
	return major > want[0] || major == want[0] && minor >= want[1]
}
