package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/jetgate/jetgate/internal/config"
)

// A field the server cannot change on an existing consumer stops start-up
// with the field's file and line, and says what to do about it.
func TestRefusedConsumerNamesItsLineAndWhatToDo(t *testing.T) {
	dir := t.TempDir()
	text := `streams: [{name: ORDERS, subjects: ["orders.>"]}]
consumers:
  - stream: ORDERS
    name: audit
  - stream: ORDERS
    name: shipping
    deliver_policy: %s
`
	o := fileOptions(t, writeConfig(t, strings.Replace(text, "%s", "all", 1)))
	o.DataDir = dir
	if err := start(t, o).Stop(); err != nil {
		t.Fatal(err)
	}
	file := writeConfig(t, strings.Replace(text, "%s", "new", 1))
	o = fileOptions(t, file)
	o.DataDir = dir
	err := runErr(t, o)
	var e *config.Error
	if !errors.As(err, &e) || e.Path != "consumers[1].deliver_policy" || e.Line != 7 {
		t.Fatalf("error %v; want one at consumers[1].deliver_policy, line 7", err)
	}
	if !strings.HasPrefix(err.Error(), file+":7: consumers[1].deliver_policy: ") {
		t.Errorf("error %q does not start with the file and line", err)
	}
	for _, w := range []string{`"shipping"`, `"ORDERS"`, "deliver policy", "another name", "nats consumer rm ORDERS shipping"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %s", err, w)
		}
	}
}
