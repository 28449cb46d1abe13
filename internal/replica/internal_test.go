package replica

import (
	"slices"
	"testing"

	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/roster"
	"github.com/jetgate/jetgate/internal/settle"
)

// The streams natsname keeps out of reach are exactly those jetgate makes.
func TestInternalStreamsAreJetgatesOwn(t *testing.T) {
	want := []string{"KV_" + settle.LedgerBucket, "KV_" + roster.Bucket, deadletter.AdvisoryStream, deadletter.WaitingStream}
	got := natsname.InternalStreams()
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("natsname's internal streams %v; jetgate makes %v", got, want)
	}
}
