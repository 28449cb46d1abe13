package consumer_test

import (
	"context"
	"testing"
	"time"
)

// Terms given up as the consumer closes (NATS still away) are counted no
// more by UnsureTerms (jetgate_terms_unrecorded): they were, kept nowhere
// (a reviewer's test).
func TestTermsGivenUpAtCloseAreNotCountedStill(t *testing.T) {
	e, proxy, _ := cutOff(t, onTerm(30*time.Second), 0)
	termLost(t, e, proxy, nil) // NATS stays black-holed
	e.stopRun()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	e.c.Close(ctx)
	if n := e.c.UnsureTerms(); n != 0 {
		t.Errorf("UnsureTerms after Close gave them up: %d; want 0", n)
	}
}
