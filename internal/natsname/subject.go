package natsname

import (
	"strings"
	"unicode"
)

// SubjectProblem says what is wrong with a NATS subject, or "" if nothing
// is. With wildcards, * and > may stand for whole tokens (> only last).
func SubjectProblem(s string, wildcards bool) string {
	switch {
	case s == "":
		return "is empty"
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return "is not a valid subject (it contains white space)"
	}
	tokens := strings.Split(s, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return "is not a valid subject (an empty token)"
		case t == "*" || t == ">":
			if !wildcards {
				return "is not a literal subject (no wildcards)"
			}
			if t == ">" && i != len(tokens)-1 {
				return "is not a valid subject (> must be the last token)"
			}
		case strings.ContainsAny(t, "*>"):
			return "is not a valid subject (a wildcard must be a whole token)"
		}
	}
	return ""
}
