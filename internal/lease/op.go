// Package lease is the lease table: every delivery this gateway handed out
// (or adopted from a token whose issuer is gone), its deadline and its
// settle state, swept by a deadline queue. The deadline rule lives here too
// (deadline.go): a lease ends a margin before JetStream would redeliver.
package lease

// Op is what a caller asks of a lease.
type Op uint8

// The settles: +ACK, -NAK, +TERM and +WPI.
const (
	OpAck Op = iota + 1
	OpNak
	OpTerm
	OpExtend
)

func (op Op) String() string {
	switch op {
	case OpAck:
		return "ack"
	case OpNak:
		return "nak"
	case OpTerm:
		return "term"
	case OpExtend:
		return "extend"
	}
	return "unknown"
}
