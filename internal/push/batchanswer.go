package push

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// maxAnswer bounds the body of a 2xx to a batch that is read for its
// failures: about 10,000 of them.
const maxAnswer = 1 << 20

// failure is one message of a batch the endpoint failed in a 2xx.
type failure struct {
	retryAfter time.Duration // 0: none given (Pusher.retryDelay)
}

// failureList is the failures member of a 2xx to a batch, or SQS's
// batchItemFailures (itemIdentifier its id).
type failureList []struct {
	ID             *string         `json:"id"`
	ItemIdentifier *string         `json:"itemIdentifier"`
	RetryAfter     json.RawMessage `json:"retry_after"`
}

// failureKeys are the members of an answer that name failures: jetgate's,
// and SQS's partial batch response's, which a handler ported from SQS
// writes (read as no failures, its messages were acked).
var failureKeys = []string{"failures", "batchItemFailures"}

// failures reads the failures of a 2xx to a batch, by Webhook-Id: its
// failures member, and SQS's batchItemFailures. An empty
// body, one that is not a JSON object, and an object without failures fail
// nothing; an object that cannot be read, or a failures list, is an error
// (the batch fails, as SQS's partial batch responses do). A UTF-8 byte
// order mark first (some serialisers write one) is read past: taken for
// "not an object", it acked the messages named failed. Of a body over
// maxAnswer, only its first maxAnswer bytes are read: a failures member
// there is the answer's, one not begun there names none (the batch was
// taken: the rest of a large answer is the endpoint's own, a result list,
// say).
func failures(body []byte) (map[string]failure, error) {
	body = bytes.TrimLeft(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(body) == 0 || body[0] != '{' {
		return nil, nil
	}
	var list failureList
	if len(body) <= maxAnswer {
		var a struct {
			Failures failureList `json:"failures"`
			SQS      failureList `json:"batchItemFailures"`
		}
		if err := json.Unmarshal(body, &a); err != nil {
			return nil, fmt.Errorf("its failures cannot be read: %v", err)
		}
		list = append(a.Failures, a.SQS...)
	} else if err := failuresAhead(body[:maxAnswer], &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, nil
	}
	out := make(map[string]failure, len(list))
	for _, f := range list {
		id := f.ID
		if id == nil {
			id = f.ItemIdentifier
		}
		if id == nil || *id == "" {
			return nil, errors.New("a failure has no id")
		}
		out[*id] = failure{retryAfter: retryAfterValue(f.RetryAfter)}
	}
	return out, nil
}

// failuresAhead reads the failures member of an object cut short (the first
// maxAnswer bytes of an answer) into list, if it begins there: it must end
// there too.
func failuresAhead(prefix []byte, list *failureList) error {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	cut := func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) }
	if _, err := dec.Token(); err != nil { // the object's '{'
		return fmt.Errorf("its failures cannot be read: %v", err)
	}
	for {
		k, err := dec.Token()
		if cut(err) {
			// No failures member in the part read, unless the key cut
			// short is its beginning.
			key := bytes.TrimLeft(prefix[dec.InputOffset():], " \t\r\n,")
			for _, k := range failureKeys {
				if len(key) > 0 && strings.HasPrefix(`"`+k+`"`, string(key)) {
					return fmt.Errorf("its failures do not end within its first %d bytes", maxAnswer)
				}
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("its failures cannot be read: %v", err)
		}
		if k == json.Delim('}') {
			return nil // the object ended: no failures member
		}
		if name, ok := k.(string); ok && slices.Contains(failureKeys, name) {
			var more failureList
			if err := dec.Decode(&more); cut(err) {
				return fmt.Errorf("its failures do not end within its first %d bytes", maxAnswer)
			} else if err != nil {
				return fmt.Errorf("its failures cannot be read: %v", err)
			}
			*list = append(*list, more...)
			continue // the other key may follow
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); cut(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("its failures cannot be read: %v", err)
		}
	}
}

// retryAfterValue reads a failure's retry_after: a duration ("5s", "1m30s")
// or seconds (5, 0.5), a day at most, as the header's (the Nak's delay is
// cut to retry.max after). Absent, null, negative or not one of those: 0,
// none.
func retryAfterValue(raw json.RawMessage) time.Duration {
	const most = 24 * time.Hour
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if d, err := time.ParseDuration(strings.TrimSpace(s)); err == nil && d >= 0 {
			return min(d, most)
		}
		return 0
	}
	var sec float64
	if err := json.Unmarshal(raw, &sec); err == nil && sec >= 0 {
		return time.Duration(min(sec, most.Seconds()) * float64(time.Second))
	}
	return 0
}
