package consumer

import (
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/settle"
)

// After a spell away, the ledger's reset record voids the leases where it
// may hold a reset the replica did not hear: any written since the last
// read (by revision, whatever the clocks); before the first read, any the
// server stored after the bind, less the skew between two servers' clocks.
func TestAResetRecordedSinceTheLastReadIsTakenAsMissed(t *testing.T) {
	bound := time.Unix(1_800_000_000, 0)
	rec := func(rev uint64, stored time.Duration) settle.ResetRecord {
		return settle.ResetRecord{Rev: rev, Stored: bound.Add(stored)}
	}
	for _, c := range []struct {
		name  string
		reads []settle.ResetRecord
		want  []bool
	}{
		{"none recorded", []settle.ResetRecord{{}, {}}, []bool{false, false}},
		{"stored before the bind", []settle.ResetRecord{rec(5, -time.Minute)}, []bool{false}},
		{"stored within the skew of the bind", []settle.ResetRecord{rec(5, -recordSkew/2)}, []bool{true}},
		{"stored after the bind", []settle.ResetRecord{rec(5, time.Second)}, []bool{true}},
		{"read again, unchanged", []settle.ResetRecord{rec(5, time.Second), rec(5, time.Second)}, []bool{true, false}},
		{"written since, stored by a clock behind", []settle.ResetRecord{rec(5, -time.Minute), rec(9, -2*time.Minute)}, []bool{false, true}},
		{"first recorded after a read of none", []settle.ResetRecord{{}, rec(3, -time.Hour)}, []bool{false, true}},
	} {
		r := resetRecords{since: bound}
		for i, read := range c.reads {
			if got := r.missed(read); got != c.want[i] {
				t.Errorf("%s, read %d (%+v): missed %v; want %v", c.name, i, read, got, c.want[i])
			}
		}
	}
	if r := (resetRecords{}); !r.missed(rec(1, -time.Hour)) {
		t.Error("a record read first with no bind time known: not missed; want missed")
	}
}
