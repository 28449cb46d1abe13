package app

import (
	"strings"
	"testing"
)

// `jetgate --deliver-policy new` on a store whose billing was made with
// all stops start-up, as DESIGN 4 says, but the error blamed other flags:
// `--stream and --consumer: the server refused to update consumer "billing"
// …: deliver policy can not be updated`. The flag that differs from the
// server is --deliver-policy, and the error names it first, as every other
// error of a flag's value does.
func TestARefusedUpdateNamesTheFlagThatDiffers(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(t)
	o.DataDir = dir
	if err := start(t, o).Stop(); err != nil {
		t.Fatal(err)
	}
	o2 := testOptions(t)
	o2.DataDir, o2.DeliverPolicy = dir, "new"
	err := runErr(t, o2)
	if err == nil || !strings.HasPrefix(err.Error(), "--deliver-policy: ") {
		t.Fatalf("error %v; want it to begin with --deliver-policy", err)
	}
}
