package natsname

import "testing"

func TestSubjectProblem(t *testing.T) {
	for _, tt := range []struct {
		subject   string
		wildcards bool
		ok        bool
	}{
		{"orders.>", true, true}, {"orders.*.x", true, true}, {"a", false, true},
		{"orders.>", false, false}, {"orders..x", true, false}, {"orders.>.x", true, false},
		{"or*ders", true, false}, {"orders x", true, false}, {"", true, false}, {".orders", true, false},
	} {
		if got := SubjectProblem(tt.subject, tt.wildcards) == ""; got != tt.ok {
			t.Errorf("SubjectProblem(%q, wildcards %v): ok %v; want %v", tt.subject, tt.wildcards, got, tt.ok)
		}
	}
}
