package consumer

import (
	"time"

	"github.com/jetgate/jetgate/internal/lease"
)

// handed records to whom ds were handed out, for Holders.
func (c *Consumer) handed(ds []*Delivery, principal string) {
	if len(ds) == 0 {
		return
	}
	rs := make([]lease.Ref, len(ds))
	for i, d := range ds {
		rs[i] = lease.Ref{StreamSeq: d.Meta.StreamSeq, Delivered: d.Meta.Delivered, ConsumerSeq: d.Meta.ConsumerSeq}
	}
	c.leases.Hand(rs, principal, time.Now())
}

// Holders counts this replica's live leases on the consumer by principal.
func (c *Consumer) Holders() []lease.Holder { return c.leases.Holders(time.Now()) }
