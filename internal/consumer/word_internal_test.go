package consumer

import (
	"sync"
	"testing"
)

// Close waits for the goroutines of the consumer's words, and a word that
// comes in after (the relay's subscription may still hold a consumer being
// unbound) runs nothing: it finds the group closed, rather than growing a
// WaitGroup that is waited on.
func TestTheWordsTakeNoGoroutineOnceClosed(t *testing.T) {
	var g wordGroup
	running, finish := make(chan struct{}), make(chan struct{})
	if !g.Go(func() {
		close(running)
		<-finish
	}) {
		t.Fatal("an open group refused a goroutine")
	}
	<-running
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		g.close()
	}()
	// Words come in while close waits, and after: each either runs before
	// close returns or is refused, never after.
	var late sync.WaitGroup
	refused := make(chan struct{})
	late.Go(func() {
		for g.Go(func() {}) {
		}
		close(refused)
	})
	<-refused
	select {
	case <-closed:
		t.Fatal("close returned while a word's goroutine still ran")
	default:
	}
	close(finish)
	<-closed
	late.Wait()
	if g.Go(func() { t.Error("a goroutine ran after close") }) {
		t.Fatal("a closed group took a goroutine")
	}
}
