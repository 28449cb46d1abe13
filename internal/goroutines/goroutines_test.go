package goroutines

import (
	"sync"
	"testing"
)

// Wait after Close returns once the goroutines running are done, and a
// goroutine asked for meanwhile or after (a late callback) either ran
// before Wait returned or is refused, never started after.
func TestAClosedGroupTakesNoGoroutine(t *testing.T) {
	var g Group
	running, finish := make(chan struct{}), make(chan struct{})
	if !g.Go(func() {
		close(running)
		<-finish
	}) {
		t.Fatal("an open group refused a goroutine")
	}
	<-running
	if !g.Close() || g.Close() {
		t.Fatal("Close did not report the first close alone")
	}
	if !g.Closed() {
		t.Fatal("a closed group reports open")
	}
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		g.Wait()
	}()
	var late sync.WaitGroup
	late.Go(func() {
		if g.Go(func() { t.Error("a goroutine ran after close") }) {
			t.Error("a closed group took a goroutine")
		}
	})
	late.Wait()
	select {
	case <-waited:
		t.Fatal("Wait returned while a goroutine still ran")
	default:
	}
	close(finish)
	<-waited
}
