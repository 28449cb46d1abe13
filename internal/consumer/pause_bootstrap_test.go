package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

// pause_until in the file is a named field like any other: a consumer that
// was resumed meanwhile (or never paused) is paused again at the next start.
func TestPauseUntilAppliesToAnExistingConsumer(t *testing.T) {
	js := bootstrapEnv(t)
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	paused := func(what string) {
		t.Helper()
		ci, err := js.Consumer(context.Background(), stream, "p")
		if err != nil {
			t.Fatal(err)
		}
		info, err := ci.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !info.Paused || info.Config.PauseUntil == nil || !info.Config.PauseUntil.Equal(until) {
			t.Fatalf("%s: paused %v until %v; want paused until %v", what, info.Paused, info.Config.PauseUntil, until)
		}
	}
	// Made without a pause, then started with one.
	if _, err := bind(t, js, consumer.Config{Stream: stream, Name: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bind(t, js, consumer.Config{Stream: stream, Name: "p", PauseUntil: &until}); err != nil {
		t.Fatal(err)
	}
	paused("an existing consumer started with pause_until")
	// Resumed by an operator, then restarted with the same file.
	if _, err := js.ResumeConsumer(context.Background(), stream, "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := bind(t, js, consumer.Config{Stream: stream, Name: "p", PauseUntil: &until}); err != nil {
		t.Fatal(err)
	}
	paused("a resumed consumer restarted with pause_until")
}
