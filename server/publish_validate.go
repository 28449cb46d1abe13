package server

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/replica"
)

// maxHeaderBytes bounds the headers of one published message.
const maxHeaderBytes = 64 << 10

// minTTL is the shortest time to live the server gives a message.
const minTTL = time.Second

// maxTTL is the longest time to live Publish takes. The server computes a
// message's expiry as its timestamp in nanoseconds plus ttl seconds × 10⁹
// in an int64 (filestore.go, memstore.go): a ttl reaching past 2262
// overflows into the past and the message is deleted at once. 100 years
// stays clear of that until 2162.
const maxTTL = 100 * 365 * 24 * time.Hour

func validatePublish(req *jetgatev1.PublishRequest) (replica.PublishRequest, error) {
	if req.GetStream() == "" {
		return replica.PublishRequest{}, fmt.Errorf("%w: stream is required", errs.ErrInvalidArgument)
	}
	return validateMessage(req.GetStream(), req.GetSubject(), req.GetData(), req.GetHeaders(), req.GetMsgId(), req.GetTtl())
}

// maxBatch bounds the messages of one atomic batch, as the server does.
const maxBatch = 1000

func validatePublishBatch(req *jetgatev1.PublishBatchRequest) ([]replica.PublishRequest, error) {
	if req.GetStream() == "" {
		return nil, fmt.Errorf("%w: stream is required", errs.ErrInvalidArgument)
	}
	switch n := len(req.GetMessages()); {
	case n == 0:
		return nil, fmt.Errorf("%w: messages: give at least one", errs.ErrInvalidArgument)
	case n > maxBatch:
		return nil, fmt.Errorf("%w: messages: %d given; a batch holds at most %d", errs.ErrInvalidArgument, n, maxBatch)
	}
	out := make([]replica.PublishRequest, len(req.GetMessages()))
	for i, m := range req.GetMessages() {
		pr, err := validateMessage(req.GetStream(), m.GetSubject(), m.GetData(), m.GetHeaders(), "", m.GetTtl())
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		out[i] = pr
	}
	return out, nil
}

// validateMessage checks one message to publish: its headers by the rules
// of NATS and jetgate's reserve, its msg_id, its ttl.
func validateMessage(stream, subject string, data []byte, headers map[string]*jetgatev1.HeaderValues, msgID string, ttl *durationpb.Duration) (replica.PublishRequest, error) {
	size := 0
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		v := headers[k]
		if !validHeaderName(k) {
			return replica.PublishRequest{}, fmt.Errorf("%w: header name %q is not one NATS takes: printable ASCII without spaces or any of %s",
				errs.ErrHeaderInvalid, k, headerNameForbidden)
		}
		if err := checkReserved(k); err != nil {
			return replica.PublishRequest{}, err
		}
		if err := checkExpected(k, v.GetValues()); err != nil {
			return replica.PublishRequest{}, err
		}
		for _, s := range v.GetValues() {
			if strings.ContainsAny(s, "\r\n") {
				return replica.PublishRequest{}, fmt.Errorf("%w: header %q has a value with a line break", errs.ErrInvalidArgument, k)
			}
			if s != strings.Trim(s, " \t") {
				// NATS drops them when it reads the message: it would not
				// come back as sent.
				return replica.PublishRequest{}, fmt.Errorf("%w: header %q has a value that starts or ends with a space or tab, which NATS drops when the message is read; trim it",
					errs.ErrInvalidArgument, k)
			}
			size += len(k) + len(s) + 4
		}
	}
	if strings.ContainsAny(msgID, "\r\n") {
		return replica.PublishRequest{}, fmt.Errorf("%w: msg_id has a line break", errs.ErrInvalidArgument)
	} else if msgID != strings.Trim(msgID, " \t") {
		// The server reads it without them: " a" deduplicates with "a", " "
		// with nothing.
		return replica.PublishRequest{}, fmt.Errorf(`%w: msg_id starts or ends with a space or tab, which NATS drops before deduplicating (" a" is a duplicate of "a"); trim it`,
			errs.ErrInvalidArgument)
	} else if msgID != "" {
		size += len("Nats-Msg-Id") + len(msgID) + 4
	}
	if size > maxHeaderBytes {
		return replica.PublishRequest{}, fmt.Errorf("%w: headers (msg_id included) are %d bytes; at most %d are allowed", errs.ErrHeadersTooLarge, size, maxHeaderBytes)
	}
	pr := replica.PublishRequest{Stream: stream, Subject: subject, Data: data, Header: headerOf(headers), MsgID: msgID}
	if ttl != nil {
		if ttl.CheckValid() != nil || ttl.AsDuration() < minTTL || ttl.AsDuration() > maxTTL {
			return replica.PublishRequest{}, fmt.Errorf("%w: ttl must be a duration from %v to %v (100 years; the NATS server cannot hold a longer one)",
				errs.ErrInvalidArgument, minTTL, maxTTL)
		}
		if ttl.AsDuration()%time.Second != 0 {
			// The server drops the fraction: the message would expire sooner
			// than its stored Nats-TTL says.
			return replica.PublishRequest{}, fmt.Errorf("%w: ttl is %v; NATS keeps a message's ttl in whole seconds, so give one (%v or %v)",
				errs.ErrInvalidArgument, ttl.AsDuration(), ttl.AsDuration().Truncate(time.Second), ttl.AsDuration().Truncate(time.Second)+time.Second)
		}
		pr.TTL = ttl.AsDuration()
	}
	return pr, nil
}

// expectedPrefix starts the names of JetStream's optimistic concurrency
// checks (Nats-Expected-Last-Sequence and the like), the one kind of Nats-
// header a client may send.
const expectedPrefix = "Nats-Expected-"

// expectedChecks are the concurrency checks the server applies (nats-server
// stream.go, JSExpected*), spelled as it reads them: case-sensitively. Any
// other Nats-Expected- name would be stored as a plain header, unchecked.
var expectedChecks = []string{
	"Nats-Expected-Stream",
	"Nats-Expected-Last-Sequence",
	"Nats-Expected-Last-Subject-Sequence",
	"Nats-Expected-Last-Subject-Sequence-Subject",
	"Nats-Expected-Last-Msg-Id",
}

// checkReserved refuses a header name NATS reserves: any that starts with
// Nats-, in any case, except the concurrency checks. Such a header could
// roll up or expire other messages, or deduplicate on the caller's say.
func checkReserved(name string) error {
	const reserved = "nats-"
	if len(name) < len(reserved) || !strings.EqualFold(name[:len(reserved)], reserved) {
		return nil
	}
	switch {
	case slices.Contains(expectedChecks, name):
		return nil
	case strings.EqualFold(name, "Nats-Msg-Id"):
		return fmt.Errorf("%w: header %q is reserved for NATS; set the msg_id field to deduplicate", errs.ErrHeaderReserved, name)
	case len(name) > len(expectedPrefix) && strings.EqualFold(name[:len(expectedPrefix)], expectedPrefix):
		return fmt.Errorf("%w: header %q is reserved for NATS and is not a concurrency check it applies; those are spelled exactly %s",
			errs.ErrHeaderReserved, name, strings.Join(expectedChecks, ", "))
	}
	return fmt.Errorf("%w: header %q is reserved for NATS; only the Nats-Expected-* concurrency checks may be sent", errs.ErrHeaderReserved, name)
}

// checkExpected refuses a concurrency check the server would not apply as
// sent: it skips an empty one, reads only the first of several values, and
// takes a sequence that is not a decimal number for one no stream has.
func checkExpected(name string, values []string) error {
	switch {
	case !slices.Contains(expectedChecks, name):
		return nil
	case len(values) != 1:
		return fmt.Errorf("%w: header %q has %d values; a concurrency check takes exactly one", errs.ErrInvalidArgument, name, len(values))
	case values[0] == "":
		return fmt.Errorf("%w: header %q is empty; the server would skip the check", errs.ErrInvalidArgument, name)
	case strings.HasSuffix(name, "-Sequence"):
		if _, err := strconv.ParseUint(values[0], 10, 64); err != nil {
			return fmt.Errorf("%w: header %q must be a stream sequence, in decimal digits", errs.ErrInvalidArgument, name)
		}
	}
	return nil
}

// headerNameForbidden are the printable ASCII characters nats.go refuses in
// a header name (nats.go makeValidHeaderKeyAsciiSet, after ADR-4): a
// publish with one fails in the client, after the request was taken.
const headerNameForbidden = `"()/,:;<=>?@[\]{}`

// validHeaderName is nats.go's rule for a header name: printable ASCII
// (33–126) but headerNameForbidden.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 33 || c > 126 || strings.IndexByte(headerNameForbidden, c) >= 0 {
			return false
		}
	}
	return true
}
