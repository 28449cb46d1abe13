package pull

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrWithdrawn ends a pull its sender withdrew (Withdraw): pull again.
var ErrWithdrawn = errors.New("the pull was withdrawn")

// Withdraw takes the open pull out of the server's line: its inbox is
// drained, so that the server, which drops a waiting pull nobody listens
// to when it looks next, hands it nothing more, while what it sent before
// it saw the unsubscription is still received (for Next or Take). Then the
// pull ends with ErrWithdrawn, unless it ended otherwise first. A pull
// that ended already is left as it is.
func (p *Pull) Withdraw() {
	p.mu.Lock()
	if p.ended || p.withdrawn {
		p.mu.Unlock()
		return
	}
	p.withdrawn = true
	p.mu.Unlock()
	closed := p.sub.StatusChanged(nats.SubscriptionClosed)
	if err := p.sub.Drain(); err != nil { // the connection is closed
		p.endWithdrawn()
		return
	}
	go func() {
		// A drain that cannot finish (the connection closed meanwhile)
		// ends with the pull's expiry, as the server's pull would.
		t := time.NewTimer(p.req.Expires + LostGrace)
		defer t.Stop()
		select {
		case <-closed:
		case <-t.C:
		}
		p.endWithdrawn()
	}()
}

// endWithdrawn ends the withdrawn pull, unless it ended otherwise first.
func (p *Pull) endWithdrawn() {
	p.mu.Lock()
	if !p.ended {
		p.end(ErrWithdrawn, time.Now())
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
