package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
)

// A Fetch is canceled as its caller's credential lapses only where it may
// still wait then: no timer for a caller whose credential never lapses, for
// another call, or for a Fetch whose wait ends well before.
func TestWaitLapsingArmsOnlyWhereTheFetchOutwaitsItsCredential(t *testing.T) {
	fetch := func(expires time.Duration) *jetgatev1.FetchRequest {
		return &jetgatev1.FetchRequest{Stream: "S", Consumer: "C", Expires: durationpb.New(expires)}
	}
	soon := time.Now().Add(time.Minute)
	for _, c := range []struct {
		name  string
		until time.Time
		req   any
		armed bool
	}{
		{"no expiry", time.Time{}, fetch(30 * time.Second), false},
		{"not a fetch", soon, &jetgatev1.AckRequest{}, false},
		{"short fetch", soon, fetch(time.Second), false},
		{"default expires", soon, &jetgatev1.FetchRequest{}, false},
		{"long fetch", soon, fetch(2 * time.Minute), true},
		{"fetch ending with the lapse", time.Now().Add(10 * time.Second), fetch(8 * time.Second), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := auth.WithUntil(context.Background(), c.until)
			got, stop := waitLapsing(ctx, c.req)
			defer stop()
			if armed := got != ctx; armed != c.armed {
				t.Fatalf("armed %v; want %v", armed, c.armed)
			}
		})
	}

	t.Run("lapse", func(t *testing.T) {
		ctx := auth.WithUntil(context.Background(), time.Now().Add(50*time.Millisecond))
		got, stop := waitLapsing(ctx, fetch(10*time.Second))
		defer stop()
		select {
		case <-got.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the Fetch's context outlived its credential")
		}
		if !errors.Is(context.Cause(got), errCredentialLapsed) {
			t.Fatalf("ended by %v; want the lapse", context.Cause(got))
		}
		if _, ok := got.Deadline(); ok {
			t.Fatal("a deadline would shorten the Fetch's wait to before the lapse")
		}
	})
}
