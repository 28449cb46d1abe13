package consumer

import (
	"time"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/token"
)

// SetConsumeMaxWait makes a Consume's pulls last up to d, so that a test
// can tell a message sent while its pull is open from one sent when it
// ends; it returns the restore.
func SetConsumeMaxWait(d time.Duration) (restore func()) {
	was := consumeMaxWait
	consumeMaxWait = d
	return func() { consumeMaxWait = was }
}

// SetDrainWait bounds the drain of the settles in flight at a reset by d,
// so that a test may hold a settle's answer longer; it returns the restore.
func SetDrainWait(d time.Duration) (restore func()) {
	was := drainWait
	drainWait = d
	return func() { drainWait = was }
}

// BeginInFlight starts a settle op of the lease cl names in the table and
// leaves it in flight, as the issuer's keep-alive or a library's extend
// beside an ack would; EndInFlight ends it as failed (the lease live again).
func (c *Consumer) BeginInFlight(cl token.Claims, op lease.Op) error {
	_, _, err := c.leases.Begin(ref(cl), op, time.Now())
	return err
}

// EndInFlight: see BeginInFlight.
func (c *Consumer) EndInFlight(cl token.Claims, op lease.Op) {
	c.leases.Finish(ref(cl), op, false, time.Now(), lease.Extension{})
}

// LeasesHeld counts the leases the table holds, settled ones kept for
// retries included: only a sweep drops one past its deadline.
func (c *Consumer) LeasesHeld() int { return c.leases.Held() }

// RetryingTerms reports whether the consumer holds Terms whose answer never
// came, to send again, or sends them now.
func (c *Consumer) RetryingTerms() bool {
	return c.settler.unsure.any() || c.settler.unsure.running.Load()
}
