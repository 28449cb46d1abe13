package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// The console is on unless the file turns it off; a value that is not a
// boolean is refused naming the field; check-config prints it either way.
func TestConsoleSetting(t *testing.T) {
	const base = "streams: [{name: ORDERS, subjects: [\"orders.>\"]}]\nconsumers: [{stream: ORDERS, name: billing}]\n"
	for _, tt := range []struct {
		name, text string
		want       bool
	}{
		{"left out", "", true},
		{"on", "console: {enabled: true}\n", true},
		{"off", "console: {enabled: false}\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Resolve(writeFile(t, base+tt.text), DefaultFlags())
			if err != nil {
				t.Fatal(err)
			}
			if c.Console.Enabled != tt.want {
				t.Errorf("console.enabled = %v, want %v", c.Console.Enabled, tt.want)
			}
			var b bytes.Buffer
			if err := Write(&b, c); err != nil {
				t.Fatal(err)
			}
			want := "console:\n  enabled: " + map[bool]string{true: "true", false: "false"}[tt.want] + "\n"
			if !strings.Contains(b.String(), want) {
				t.Errorf("check-config output lacks %q:\n%s", want, b.String())
			}
		})
	}
	for _, bad := range []string{"console: {enabled: maybe}\n", "console: {enable: false}\n", "console: off\n"} {
		_, err := Resolve(writeFile(t, base+bad), DefaultFlags())
		var ce *Error
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Path, "console") {
			t.Errorf("%q: %v; want an error naming console", bad, err)
		}
	}
}
