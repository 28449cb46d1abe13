package core

import (
	"errors"
	"testing"

	"github.com/jetgate/jetgate/internal/errs"
)

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		pattern, subject string
		want             bool
	}{
		{"orders", "orders", true},
		{"orders", "order", false},
		{"orders", "orders.eu", false},
		{"orders.eu", "orders", false},
		{"orders.eu", "orders.eu", true},
		{"orders.eu", "orders.us", false},
		{"orders.*", "orders.eu", true},
		{"orders.*", "orders", false},
		{"orders.*", "orders.eu.paris", false},
		{"*.eu", "orders.eu", true},
		{"*.eu", "orders.us", false},
		{"*", "orders", true},
		{"*", "orders.eu", false},
		{"orders.*.paris", "orders.eu.paris", true},
		{"orders.*.paris", "orders.eu.lyon", false},
		{"orders.>", "orders.eu", true},
		{"orders.>", "orders.eu.paris", true},
		{"orders.>", "orders", false},
		{"orders.>", "payments.eu", false},
		{">", "orders", true},
		{">", "orders.eu.paris", true},
		{"*.>", "orders", false},
		{"*.>", "orders.eu", true},
		{"orders.eu.>", "orders.eu", false},
		{"ord*", "orders", false},
		{"ord*", "ord*", true},
		{"orders.>x", "orders.eu", false},
	}
	for _, tt := range tests {
		if got := subjectMatches(tt.pattern, tt.subject); got != tt.want {
			t.Errorf("subjectMatches(%q, %q) = %t, want %t", tt.pattern, tt.subject, got, tt.want)
		}
	}
}

func TestValidSubject(t *testing.T) {
	tests := []struct {
		subject string
		want    error
	}{
		{"orders", nil},
		{"orders.eu.paris", nil},
		{"orders-1.eu_2", nil},
		{"a.$b", nil},
		{"$JS.API.STREAM.DELETE.ORDERS", errs.ErrSubjectNotAllowed},
		{"$SYS.REQ", errs.ErrSubjectNotAllowed},
		{"$", errs.ErrSubjectNotAllowed},
		{"", errs.ErrInvalidArgument},
		{"orders.*", errs.ErrInvalidArgument},
		{"orders.>", errs.ErrInvalidArgument},
		{"*", errs.ErrInvalidArgument},
		{">", errs.ErrInvalidArgument},
		{"ord*ers", errs.ErrInvalidArgument},
		{"orders eu", errs.ErrInvalidArgument},
		{"orders\teu", errs.ErrInvalidArgument},
		{"orders\r\nPUB x 1", errs.ErrInvalidArgument},
		{"orders\n", errs.ErrInvalidArgument},
		{" orders", errs.ErrInvalidArgument},
		{".orders", errs.ErrInvalidArgument},
		{"orders.", errs.ErrInvalidArgument},
		{"orders..eu", errs.ErrInvalidArgument},
		{".", errs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		err := validSubject(tt.subject)
		if tt.want == nil {
			if err != nil {
				t.Errorf("validSubject(%q) = %v, want nil", tt.subject, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("validSubject(%q) = %v, want %v", tt.subject, err, tt.want)
		}
		if tt.want == errs.ErrSubjectNotAllowed && errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("validSubject(%q) = %v, is both errs.ErrSubjectNotAllowed and errs.ErrInvalidArgument", tt.subject, err)
		}
	}
}
