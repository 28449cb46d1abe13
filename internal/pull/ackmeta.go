package pull

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Metadata is what a delivery's ack subject says about it.
type Metadata struct {
	Stream      string
	Consumer    string
	StreamSeq   uint64
	ConsumerSeq uint64
	Delivered   uint64
	Pending     uint64
	Timestamp   time.Time
}

// ErrNotAckSubject is a reply subject that is not a JetStream ack subject.
var ErrNotAckSubject = errors.New("not a JetStream ack subject")

// ParseAckSubject reads a delivery's reply subject, in either form the server
// sends:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
//	$JS.ACK.<domain>.<acchash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
func ParseAckSubject(subject string) (Metadata, error) {
	var md Metadata
	rest, ok := strings.CutPrefix(subject, "$JS.ACK.")
	if !ok {
		return md, ErrNotAckSubject
	}
	var tok [10]string
	n := 0
	for n < len(tok) {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			tok[n] = rest
			n++
			break
		}
		tok[n], rest = rest[:i], rest[i+1:]
		n++
	}
	var t []string
	switch {
	case n == 7:
		t = tok[:7]
	case n >= 9:
		t = tok[2:9]
	default:
		return md, ErrNotAckSubject
	}
	var nums [5]uint64
	for i, s := range t[2:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return md, ErrNotAckSubject
		}
		nums[i] = v
	}
	md.Stream, md.Consumer = t[0], t[1]
	md.Delivered, md.StreamSeq, md.ConsumerSeq = nums[0], nums[1], nums[2]
	md.Timestamp = time.Unix(0, int64(nums[3]))
	md.Pending = nums[4]
	return md, nil
}

// AckSubject rebuilds the 9-token ack subject of a delivery. The server
// listens on it whatever form it sends, and reads only the consumer,
// delivery count and sequences from it.
func AckSubject(stream, consumer string, delivered, streamSeq, consumerSeq uint64) string {
	var b strings.Builder
	b.Grow(len("$JS.ACK...") + len(stream) + len(consumer) + 3*20 + 4)
	b.WriteString("$JS.ACK.")
	b.WriteString(stream)
	b.WriteByte('.')
	b.WriteString(consumer)
	for _, v := range [...]uint64{delivered, streamSeq, consumerSeq, 0, 0} {
		b.WriteByte('.')
		b.WriteString(strconv.FormatUint(v, 10))
	}
	return b.String()
}
