// Package settle is the settle path: the payload of each settle, the
// pipelined requests that carry a batch of them to JetStream (sender.go),
// the split of a batch's tokens into this replica's leases and each other
// issuer's (partition.go), and the wire of settles forwarded between
// replicas (forward.go).
package settle

import (
	"strconv"
	"strings"
	"time"

	"github.com/jetgate/jetgate/internal/lease"
)

// Args are the optional parts of a settle.
type Args struct {
	Delay     time.Duration // Nak
	Reason    string        // Term
	Principal string        // the caller, bound into Extend's new token
	// Duration is how long an Extend asks its leases to last from now: nil
	// is one ack_wait; 0 gives them back (a Nak); more, the issuer keeps
	// them alive that long.
	Duration *time.Duration
	// KeepAlive marks the issuer's own Extend (a lease kept alive, a
	// Consume's auto_extend), not its caller's: a lease's keep stays, and
	// no new token is issued.
	KeepAlive bool
	// Orphan marks the gateway's Nak of an orphan (lease.Ref.Orphan).
	Orphan bool
}

// Payload is the body JetStream expects on a delivery's ack subject for op.
func Payload(op lease.Op, a Args) []byte {
	switch op {
	case lease.OpAck:
		return []byte("+ACK")
	case lease.OpNak:
		if a.Delay > 0 {
			return []byte(`-NAK {"delay":` + strconv.FormatInt(int64(a.Delay), 10) + `}`)
		}
		return []byte("-NAK")
	case lease.OpTerm:
		if r := strings.TrimSpace(a.Reason); r != "" {
			return []byte("+TERM " + r)
		}
		return []byte("+TERM")
	case lease.OpExtend:
		return []byte("+WPI")
	}
	return nil
}

// Outcome is the result of settling one token.
type Outcome struct {
	Err      error     // nil on success
	NewToken string    // Extend only
	Deadline time.Time // Extend only
}

// Fill sets every outcome to err.
func Fill(out []Outcome, err error) []Outcome {
	for i := range out {
		out[i].Err = err
	}
	return out
}
