package settle

import (
	"testing"
	"time"
)

// Every reset recorded raises the record's revision, one whose time is
// earlier than the record's too (its noticer's clock behind another's):
// a replica that was away tells a reset recorded since it last read by
// the revision alone. The later time still stands.
func TestEveryResetRecordedRaisesTheRevision(t *testing.T) {
	l, ctx := testLedger(t)
	if rec, err := l.ResetRecordOf(ctx, "ORDERS", "billing"); err != nil || rec.Rev != 0 {
		t.Fatalf("none recorded: %+v, %v; want revision 0", rec, err)
	}
	later, earlier := time.UnixMilli(1_800_000_005_000), time.UnixMilli(1_800_000_000_000)
	var last uint64
	for _, at := range []time.Time{later, earlier} {
		if err := l.RecordReset(ctx, "ORDERS", "billing", at, time.Hour); err != nil {
			t.Fatal(err)
		}
		rec, err := l.ResetRecordOf(ctx, "ORDERS", "billing")
		if err != nil || rec.Rev <= last || !rec.At.Equal(later) || rec.Stored.IsZero() {
			t.Fatalf("after recording %v: %+v, %v; want a revision above %d, the later time %v", at, rec, err, last, later)
		}
		last = rec.Rev
	}
}
